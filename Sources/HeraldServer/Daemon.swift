import CLibUV
import HeraldTLS
#if canImport(Glibc)
import Glibc
#endif

/// The `heraldd` command: arguments → config → server → exit code.
///
/// Kept here rather than in `main.swift` so the exit paths (help, version, bad flags,
/// bad config) are ordinary testable code.
public enum Daemon {
    /// Exit code for bad flags or configuration (as `sysexits.h` EX_USAGE / EX_CONFIG).
    public static let usageError: Int32 = 64
    /// Exit code when the server cannot start (e.g. the port is taken).
    public static let startError: Int32 = 70

    /// Runs the daemon until it is told to stop.
    /// - Parameter arguments: the command line without the program name.
    /// - Returns: the process exit code.
    public static func run(arguments: [String]) -> Int32 {
        let options: CommandLineOptions
        do {
            options = try CommandLineOptions.parse(arguments)
        } catch {
            printError("heraldd: " + error.description + "\nTry 'heraldd --help'.")
            return usageError
        }
        if options.showHelp {
            print(CommandLineOptions.helpText)
            return 0
        }
        if options.showVersion {
            print("heraldd " + Version.current)
            return 0
        }
        if let lists = options.reshard {
            return Reshard.main(old: lists.old, new: lists.new, prefix: options.keyPrefix ?? ClusterSettings.defaultKeyPrefix)
        }
        if let token = options.hashToken {
            guard let line = Config.hashToken(token) else {
                printError("heraldd: OpenSSL could not derive the key")
                return startError
            }
            print(line)
            return 0
        }
        return serve(options)
    }

    private static func serve(_ options: CommandLineOptions) -> Int32 {
        let load = { () throws(ConfigError) -> Config in try loadConfig(options) }
        let config: Config
        let tls: TLSContext?
        do {
            config = try load()
            tls = try config.makeTLSContext()
        } catch {
            printError("heraldd: " + error.description)
            return usageError
        }
        if options.checkConfig {
            print("heraldd: configuration OK")
            return 0
        }
        prepareSignals()
        // Before the state is read: recovery and teardown free millions of small blocks
        // (CLibUV/shim.h says why fastbins stall the loop).
        _ = herald_disable_malloc_fastbins()
        let logger = Logger(component: "heraldd", level: config.logLevel)
        var recovered: RecoveredState?
        if let directory = config.dataDir {
            do {
                recovered = try recoverState(directory, repair: options.repair, logger: logger)
            } catch {
                logger.error("cannot start: state files unusable", ["error": error.description])
                return startError
            }
        }
        var join: ClusterJoin?
        if let settings = config.cluster {
            do throws(ClusterError) {
                join = try ClusterJoin.join(settings, epochCandidate: makeEpoch())
            } catch {
                logger.error("cannot start: cluster", ["error": error.description])
                return startError
            }
        }
        do {
            let server = try Server(config: config, logger: logger, reload: { try load() }, recovered: recovered,
                                tls: tls, cluster: join)
            logger.info("starting", ["version": Version.current, "workers": config.workers])
            try server.run()
            return 0
        } catch {
            logger.error("cannot start", ["error": error.description])
            return startError
        }
    }

    /// Loads the data folder and logs what recovery did.
    private static func recoverState(_ directory: String, repair: Bool, logger: Logger) throws(PersistenceError) -> RecoveredState {
        let recovered = try StateDirectory.recover(path: directory, repair: repair)
        for warning in recovered.permissionWarnings { logger.warn("data folder permissions", ["note": warning]) }
        for note in recovered.notes { logger.warn("state recovery", ["note": note]) }
        if !recovered.lostChannels.isEmpty {
            let names = recovered.lostChannels.map { String(decoding: $0, as: UTF8.self) }
            logger.error("state repair could not rebuild these channels; they start empty",
                         ["count": String(names.count), "channels": names.joined(separator: " ")])
        }
        if let folder = recovered.damagedFolder {
            logger.warn("state repair set files aside", ["folder": folder, "report": folder + "/report.txt"])
        }
        logger.info("state loaded", ["dir": directory, "channels": String(recovered.entries.count),
                                     "replayed": String(recovered.replayed), "generation": String(recovered.generation)])
        return recovered
    }

    /// The file's configuration (defaults when no `--config`), with flags applied on top.
    static func loadConfig(_ options: CommandLineOptions) throws(ConfigError) -> Config {
        let base = try options.configPath.map { path throws(ConfigError) in try Config.load(path: path) } ?? Config()
        return try options.apply(to: base)
    }

    /// Ignores SIGPIPE (a peer gone mid-write is an error code, not a crash) and unblocks
    /// the signals the loop handles: a parent may have started us with them blocked.
    private static func prepareSignals() {
        signal(SIGPIPE, SIG_IGN)
        var handled = sigset_t()
        sigemptyset(&handled)
        for signum in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&handled, signum) }
        pthread_sigmask(SIG_UNBLOCK, &handled, nil)
    }

    private static func printError(_ text: String) {
        let line = text + "\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }
}
