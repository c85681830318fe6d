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
    4 not supported by this daemon yet, 5 timed out (sub/reply/handle --count not reached,
    req without reply, bench events missing), 6 no responders (req), 7 no such connection
    (kick).
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
      reply CHANNEL            answer requests on CHANNEL with fixed data
      handle CHANNEL           handle signals at CHANNEL (pass, or --stop)
      presence CHANNEL         list who is in CHANNEL (--watch: follow joins and leaves)
      clients                  list every connection (an admin user's token)
      kick CLIENT              close a connection (an admin user's token)
      handlers CHANNEL         list a channel's signal handlers (an admin user's token)
      bench [CHANNEL]          measure pub/sub throughput and latency

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

        Sends a signal up CHANNEL's hierarchy. Prints each callback a handler sends as it
        comes, {"callback":DATA,"from":CLIENT}, then the result:
        {"id":…,"handled_by":GLOBAL_ID|null,"at":LEVEL|null,"hops":N,"timeouts":[…]}.
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

        Lists channels (matching PATTERN): "CHANNEL subs=N seq=S" (then " owner=C", " link=P"
        when set) per line, or with --json one {"ch","subs","owner","has_value","seq","link"?}
        object per line.
        """,
        "reply": """
        Usage: herald reply CHANNEL [--data JSON] [--count N] [--group G] [--timeout S] [--json]

        Answers every request on CHANNEL (a name or pattern) with the same reply data and
        prints each request answered, like sub: "CHANNEL #SEQ FROM DATA" (or --json lines).
        Plain events on the channel are not answered or printed.
          --data JSON   the reply's data (default: a reply without data)
          --count N     exit 0 after answering N requests
          --group G     share the requests with other responders in queue group G
          --timeout S   stop after S seconds: exit 0, or 5 if --count requests did not all come
        """,
        "handle": """
        Usage: herald handle CHANNEL [--stop] [--callback JSON] [--count N] [--timeout S] [--json]

        Handles signals offered at level CHANNEL (a name or pattern): sends the callback to the
        sender (if given), then answers pass (the signal goes on up) or, with --stop, stop (the
        route ends here). Prints each offer: "LEVEL ORIGIN FROM DATA", or with --json one
        {"level","origin","id","from","data"} object per line.
          --stop            answer stop instead of pass
          --callback JSON   call the sender back with JSON before answering
          --count N         exit 0 after N offers
          --timeout S       stop after S seconds: exit 0, or 5 if --count offers did not all come
        """,
        "clients": """
        Usage: herald clients [--json]

        Lists every connection of the daemon (every node's in cluster mode), one line each:
        CLIENT USER NAME ADDR TRANSPORT SUBS PENDING_BYTES DROPPED CONNECTED_MS ("-" for no
        user or name); with --json one object per line. Needs an admin user's --token when
        auth is on.
        """,
        "kick": """
        Usage: herald kick CLIENT

        Closes connection CLIENT (e.g. c7): it is told "kicked". Prints "kicked CLIENT" and
        exits 0, or "no connection CLIENT" and exits 7. Needs an admin user's --token when
        auth is on.
        """,
        "handlers": """
        Usage: herald handlers CHANNEL [--json]

        Lists the signal handlers (handle subscriptions) a signal on CHANNEL (a concrete name)
        is offered to at its own level, one client id per line in the order the signal asks
        them (every node's in cluster mode); with --json one array. A link's further levels
        are not followed. Needs an admin user's --token when auth is on.
        """,
        "presence": """
        Usage: herald presence CHANNEL [--watch] [--count N] [--timeout S] [--json]

        Lists CHANNEL's members (connections subscribed to exactly CHANNEL), every page, one
        "CLIENT USER INFO" line each ("-" for no user or no info), then "count N"; with --json
        one {"client","user"?,"info"?} object per line, then {"count":N}.
          --watch       then follow $presence.CHANNEL: "join CLIENT USER INFO",
                        "leave CLIENT USER INFO" and "count N" lines (a large or busy channel
                        is told by count; in cluster mode "count N node NAME", one node's
                        own count), or with --json each event's data object per line
          --count N     with --watch: exit 0 after N join, leave or count lines
          --timeout S   with --watch: stop after S seconds: exit 0, or 5 if --count lines did
                        not all come
        """,
        "bench": """
        Usage: herald bench [CHANNEL] [--count N] [--size B] [--timeout S] [--json]

        Measures pub/sub through the client library: one connection subscribes to CHANNEL
        (default bench.herald), another publishes N events (default 10000) of about B bytes
        (default 64) with their send time, at most 1000 unreceived at a time. Prints
        "messages", "size", "seconds", "msgs/s", "p50_ms", "p99_ms" one per line (latency from
        publish to the handler), or with --json one object {"messages","size","seconds",
        "msgs_per_s","p50_ms","p99_ms"}. Exit 5 (numbers still printed) when not every event
        arrived within --timeout S (default 60).
          --count N     events to publish
          --size B      approximate payload bytes, 1…1000000
        """,
    ]

    /// The help for `command`, with the connection flags and exit codes.
    static func text(for command: String) -> String? {
        commands[command].map { $0 + "\n\n" + connection + "\n\n" + exitCodes }
    }
}
