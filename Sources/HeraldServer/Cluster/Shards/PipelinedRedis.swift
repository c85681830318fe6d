import CHiredis
#if canImport(Glibc)
import Glibc
#endif

/// A blocking connection to one Redis server that sends a batch of commands in one write
/// and reads their replies in order: hiredis's synchronous API (`redisAppendFormattedCommand`,
/// then `redisGetReply` per command), for `heraldd --reshard`, which runs alone with the
/// cluster stopped.
///
/// Not `RedisLink` on a private loop: the tool does one thing after another, so a loop, its
/// callbacks and a link that reconnects by itself forever would only stand between it and
/// the plain "this batch failed" it needs to stop and say so. What it shares with the
/// links: the RESP encoding (`RedisLink.withTerminated`, arguments as bytes, so channel
/// names and `DUMP` payloads go out as they are) and `RedisReply`.
final class PipelinedRedis {
    /// The server, for messages.
    let address: RedisAddress
    private let context: UnsafeMutablePointer<redisContext>
    private var isClosed = false

    /// How long a connect, and then each reply, may take: a `RESTORE` of a large history
    /// stream is slower than anything a node sends.
    static let defaultTimeoutSeconds = 30

    /// Connects and sends `AUTH` first when given credentials.
    /// - Throws: `ClusterError` naming the server and what failed (Redis's words for a
    ///   refused password, never the password).
    init(_ address: RedisAddress, credentials: RedisCredentials?,
         timeoutSeconds: Int = PipelinedRedis.defaultTimeoutSeconds) throws(ClusterError) {
        self.address = address
        let timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        guard let made = redisConnectWithTimeout(address.host, Int32(address.port), timeout) else {
            throw ClusterError("cannot reach Redis at \(address): out of memory")
        }
        if made.pointee.err != 0 {
            let reason = Self.errorText(made)
            redisFree(made)
            throw ClusterError("cannot reach Redis at \(address): \(reason)")
        }
        _ = redisSetTimeout(made, timeout)
        context = made
        guard let credentials else { return }
        let reply: RedisReply
        do throws(ClusterError) {
            reply = try run(credentials.authArguments)
        } catch {
            close()
            throw error
        }
        if let failure = reply.failure {
            close()
            throw ClusterError("Redis at \(address) refused the credentials (\(credentials)): \(failure)")
        }
    }

    deinit {
        close()
    }

    /// Runs one command.
    /// - Returns: its reply (an error reply too: the caller knows what it may mean).
    /// - Throws: `ClusterError` when the connection fails or a reply does not come in time.
    func run(_ arguments: [[UInt8]]) throws(ClusterError) -> RedisReply {
        guard let reply = try pipeline([arguments]).first else {
            throw ClusterError("Redis at \(address): no reply")
        }
        return reply
    }

    /// Runs one command whose arguments are text.
    func run(_ arguments: String...) throws(ClusterError) -> RedisReply {
        try run(arguments.map { Array($0.utf8) })
    }

    /// Writes every command at once, then reads one reply per command, in order.
    /// - Returns: the replies, error replies included, one per command.
    /// - Throws: `ClusterError` when the connection fails or a reply does not come in time
    ///   (the connection is then unusable: the tool stops, and a run again resumes).
    func pipeline(_ commands: [[[UInt8]]]) throws(ClusterError) -> [RedisReply] {
        guard !isClosed else { throw ClusterError("Redis at \(address): connection closed") }
        for command in commands {
            let status = RedisLink.withTerminated(command) { bytes, count in
                redisAppendFormattedCommand(context, bytes, count)
            }
            guard status == REDIS_OK else { throw ClusterError("Redis at \(address): \(Self.errorText(context))") }
        }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands {
            var raw: UnsafeMutableRawPointer?
            guard redisGetReply(context, &raw) == REDIS_OK, let raw else {
                throw ClusterError("Redis at \(address): \(Self.errorText(context))")
            }
            replies.append(RedisReply(UnsafePointer(raw.assumingMemoryBound(to: redisReply.self))))
            freeReplyObject(raw)
        }
        return replies
    }

    /// Ends the connection (again: nothing).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        redisFree(context)
    }

    /// hiredis's error text of `context` (`errstr`, a fixed C array).
    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        let text = withUnsafeBytes(of: context.pointee.errstr) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return text.isEmpty ? "connection failed" : text
    }
}
