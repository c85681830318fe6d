/// What a node says to Redis (or to a sentinel) before anything else: `AUTH PASSWORD`, or
/// `AUTH USER PASSWORD` for a Redis 6+ ACL user (docs/cluster.md, "Redis credentials").
///
/// The password never reaches a log line, an error or `/varz`: `description` hides it, and
/// every message about a URL shows the URL with its credentials cut out
/// (`ClusterSettings.redacted`).
public struct RedisCredentials: Equatable, Sendable, CustomStringConvertible {
    /// The ACL user; nil for the `default` user (`requirepass`).
    public var user: String?
    /// The password.
    public var password: String

    /// Creates credentials.
    public init(user: String?, password: String) {
        self.user = user
        self.password = password
    }

    /// The `AUTH` command's arguments.
    var authArguments: [[UInt8]] {
        [Array("AUTH".utf8)] + (user.map { [Array($0.utf8)] } ?? []) + [Array(password.utf8)]
    }

    /// The same as strings, for the blocking connection.
    var authStrings: [String] { ["AUTH"] + (user.map { [$0] } ?? []) + [password] }

    /// `user NAME, password hidden` or `password hidden`: what logs may say.
    public var description: String { (user.map { "user " + $0 + ", " } ?? "") + "password hidden" }
}
