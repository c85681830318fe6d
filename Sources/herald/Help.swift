/// `--help` texts, one per command.
enum Help {
    static let connection = """
    Connection (every command):
      --host HOST     daemon host (default 127.0.0.1)
      --port PORT     daemon port (default 7400)
      --unix PATH     connect to a Unix socket instead of TCP
      --tls           use TLS (the daemon's tls_port), verified against the system CAs
      --tls-ca FILE   use TLS, trusting only the CA certificate(s) in FILE
      --tls-insecure  use TLS without checking the certificate (development only)
      --token TOKEN   auth token sent in hello
      --name NAME     client name sent in hello (default herald-cli)
      -h, --help      this help
    """

    static let exitCodes = """
    Exit codes: 0 ok, 1 daemon error, 2 usage error, 3 connection failed or lost,
    4 not supported by this daemon yet, 5 timed out, 6 no responders (req).
    """

    static let overview = """
    herald: command-line client for heraldd

    Usage: herald COMMAND [ARGS] [FLAGS]

    Commands:
      pub CHANNEL [JSON]       publish an event (JSON "-" reads standard input)
      sub PATTERN              print events as they arrive
      req CHANNEL [JSON]       send a request, print the first reply
      signal CHANNEL [JSON]    send a signal up the channel hierarchy
      get CHANNEL              print a channel's retained value
      set CHANNEL JSON         set a channel's retained value
      stats                    print the daemon's counters
      channels [PATTERN]       list channels

    Run herald COMMAND --help for a command's flags.

    \(connection)

    \(exitCodes)
    """

    static let commands: [String: String] = [
        "pub": """
        Usage: herald pub CHANNEL [JSON] [--receipt] [--json]

        Publishes one event on CHANNEL (a concrete name). JSON is the event's data, any JSON
        value; "-" reads it from standard input; without it the event has no data.
          --receipt   print the receipt: "seq S receivers K" (with --json: {"seq":S,"receivers":K})
        """,
        "sub": """
        Usage: herald sub PATTERN [--count N] [--group G] [--timeout S] [--json]

        Subscribes to PATTERN (a name, or * for one segment and a final > for the rest) and
        prints each event: "CHANNEL #SEQ FROM DATA" or, with --json, one JSON object per line:
        {"ch":…,"seq":…,"from":…,"data":…}.
          --count N     exit 0 after N events
          --group G     join queue group G (each event goes to one member)
          --timeout S   stop after S seconds: exit 0, or 5 if --count events did not all arrive
        """,
        "req": """
        Usage: herald req CHANNEL [JSON] [--timeout MS] [--json]

        Sends a request on CHANNEL (a concrete name) with JSON as its data ("-" reads standard
        input) and prints the first reply's data ("-" when the reply has none); with --json
        one object {"from":REPLIER,"data":…}. Exit 5 when no reply came in time, 6 when no
        subscriber received the request (no responders).
          --timeout MS  milliseconds to wait for a reply, 1…3600000 (default 1000)
        """,
        "signal": """
        Usage: herald signal CHANNEL [JSON] [--timeout S]

        Sends a signal up CHANNEL's hierarchy and prints the daemon's answer as JSON.
          --timeout S   per-handler timeout (default 1)
        """,
        "get": """
        Usage: herald get CHANNEL [--json]

        Prints CHANNEL's retained value (with --json: {"rev":R,"value":V}).
        """,
        "set": """
        Usage: herald set CHANNEL JSON [--if-rev R]

        Sets CHANNEL's retained value and prints the new rev.
          --if-rev R    only if the channel's rev is R (else exit 1, conflict)
        """,
        "stats": """
        Usage: herald stats [--json]

        Prints the daemon's counters, one "name value" per line (with --json: one object).
        """,
        "channels": """
        Usage: herald channels [PATTERN] [--json]

        Lists channels (matching PATTERN): "CHANNEL subs=N seq=S" per line, or with --json one
        {"ch","subs","owner","has_value","seq"} object per line.
        """,
    ]

    /// The help for `command`, with the connection flags and exit codes.
    static func text(for command: String) -> String? {
        commands[command].map { $0 + "\n\n" + connection + "\n\n" + exitCodes }
    }
}
