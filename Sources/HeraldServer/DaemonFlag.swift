/// The flags `heraldd` accepts, with what the help text says about each.
///
/// One table drives parsing and `--help`, so a flag cannot exist without being documented.
enum DaemonFlag: String, CaseIterable, Sendable {
    case config = "--config"
    case host = "--host"
    case port = "--port"
    case unix = "--unix"
    case dataDir = "--data-dir"
    case workers = "--workers"
    case logLevel = "--log-level"
    case checkConfig = "--check-config"
    case repair = "--repair"
    case hashToken = "--hash-token"
    case reshard = "--reshard"
    case keyPrefix = "--key-prefix"
    case version = "--version"
    case help = "--help"

    /// The flag for a spelling on the command line; `-h` is the one short alias.
    static func named(_ name: String) -> DaemonFlag? {
        name == "-h" ? .help : DaemonFlag(rawValue: name)
    }

    /// The config key a value flag overrides, whose rule validates it; `nil` for the others.
    var configKey: ConfigKey? {
        switch self {
        case .host: return .host
        case .port: return .port
        case .unix: return .unix
        case .dataDir: return .dataDir
        case .workers: return .workers
        case .logLevel: return .logLevel
        case .config, .checkConfig, .repair, .version, .help, .hashToken, .reshard, .keyPrefix: return nil
        }
    }

    /// The placeholder shown after the flag in help, or `nil` for a switch.
    var valuePlaceholder: String? {
        switch self {
        case .config, .unix, .dataDir: return "<path>"
        case .host: return "<address>"
        case .port, .workers: return "<n>"
        case .logLevel: return "<level>"
        case .hashToken: return "<token>"
        case .reshard: return "<old> <new>"
        case .keyPrefix: return "<prefix>"
        case .checkConfig, .repair, .version, .help: return nil
        }
    }

    /// How the flag appears in help, aliases included.
    var usage: String {
        let spelled = self == .help ? "-h, --help" : rawValue
        return valuePlaceholder.map { "\(spelled) \($0)" } ?? spelled
    }

    /// One line on what the flag does, with its default where it has one.
    var summary: String {
        let defaults = Config()
        switch self {
        case .config: return "JSON5 config file (default: none, built-in defaults)"
        case .host: return "TCP listen address (default: \(defaults.host))"
        case .port: return "TCP port, 0 picks a free one (default: \(defaults.port))"
        case .unix: return "also listen on this Unix socket (default: none)"
        case .dataDir: return "directory for persistent state (default: none, memory only)"
        case .workers: return "event-loop threads, 1...64 (default: \(defaults.workers))"
        case .logLevel: return "debug, info, warn or error (default: \(defaults.logLevel.rawValue))"
        case .checkConfig: return "validate the config and flags, print the result, exit"
        case .repair: return "start from what still verifies in damaged state files (set aside in damaged/)"
        case .hashToken: return "print a token_hash line for auth.users (pbkdf2-sha256, random salt), exit"
        case .reshard: return "move channels from shard list <old> to <new> (comma-separated redis:// URLs), cluster stopped, exit"
        case .keyPrefix: return "with --reshard: the cluster's key_prefix (default: \(ClusterSettings.defaultKeyPrefix))"
        case .version: return "print the version and exit"
        case .help: return "print this help and exit"
        }
    }
}
