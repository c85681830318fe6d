/// Why `heraldd --reshard` stopped, in two kinds that exit differently.
///
/// `refused`: the request cannot be carried out as given (a bad list, another reshard
/// unfinished, a node still running): nothing was changed, and the operator must change
/// something first. `failed`: Redis failed or the data did not check out part-way; what
/// was done is recorded, and the same command run again goes on from there.
enum ReshardError: Error, CustomStringConvertible, Equatable {
    /// The request was refused before anything changed.
    case refused(String)
    /// The work stopped part-way; running the same command again resumes it.
    case failed(String)

    /// The message, for stderr.
    var description: String {
        switch self {
        case .refused(let text), .failed(let text): return text
        }
    }

    /// The process's exit code: `Daemon.usageError` for a refusal, `Daemon.startError`
    /// for a failure.
    var exitCode: Int32 {
        switch self {
        case .refused: return Daemon.usageError
        case .failed: return Daemon.startError
        }
    }

    /// A Redis failure as a `failed`.
    init(_ error: ClusterError) {
        self = .failed(error.description)
    }
}
