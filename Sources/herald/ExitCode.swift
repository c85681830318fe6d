/// The `herald` CLI's exit codes; scripts may rely on them (docs/client.md lists them).
enum ExitCode: Int32 {
    /// Done as asked.
    case success = 0
    /// The daemon answered with an error (bad channel, forbidden, a request's timeout, …).
    case serverError = 1
    /// The command line was wrong; the message says how (see `--help`).
    case usage = 2
    /// Could not connect, or the connection was lost.
    case connection = 3
    /// The daemon does not implement this command's op yet (`unknown_op`).
    case unsupported = 4
    /// Timed out: `sub --count N --timeout S` saw fewer than N events in S seconds, or a
    /// `req` got no reply within its `--timeout`.
    case timeout = 5
    /// A `req` reached no responder (nothing subscribes to the channel, or all are locked).
    case noResponders = 6
    /// A `kick` named no open connection.
    case notFound = 7
}
