import Foundation
import HeraldBroker
#if canImport(Glibc)
import Glibc
#endif

/// Why the state files cannot be used; the daemon refuses to start with this message.
public struct PersistenceError: Error, CustomStringConvertible, Equatable {
    /// What is wrong and what to do about it.
    public let description: String

    init(_ description: String) { self.description = description }
}

/// What start-up recovered from the data folder, and the open files the writer continues.
public struct RecoveredState: Sendable {
    /// The state by channel name, tombstones not yet collected included.
    public var entries: [[UInt8]: StoredState]
    /// The rev floor left by collected tombstones (`StateStore.revFloor`).
    public var revFloor: Int = 0
    /// The generation of the log in use, `log.<generation>` (the newest).
    public var generation: UInt64
    /// The log file, open for appending, already cut to its valid length.
    public var logDescriptor: Int32
    /// The log's valid length in bytes.
    public var logBytes: Int
    /// The snapshot's size in bytes (0 when there is none).
    public var snapshotBytes: Int
    /// The lock file's descriptor, held (flock) for the daemon's life.
    public var lockDescriptor: Int32
    /// Things worth a log line (a cut tail, a repair), in order.
    public var notes: [String]
    /// Permission problems found in the data folder (a folder others could read, tightened
    /// or not), each worth a warning of its own.
    public var permissionWarnings: [String] = []
    /// Records replayed from the log.
    public var replayed: Int
    /// Channels `--repair` could not rebuild (reported, never half-built), by name.
    public var lostChannels: [[UInt8]] = []
    /// The `damaged/<time>` folder `--repair` set files aside in, nil when it set none aside.
    public var damagedFolder: String?
}

/// The data folder: `snapshot`, `snapshot.previous`, `log.<generation>`, `lock`, `damaged/`,
/// and the start-up recovery.
///
/// Recovery: the base is `snapshot` (else `snapshot.previous`, left alone by a compaction
/// interrupted between its renames; else the empty state of generation 0), verified whole
/// before any of it is applied (`SnapshotFile.verify`); then every log from the base's
/// generation to the newest is replayed (`ChainLoader`). A torn or damaged tail of the newest
/// log is cut (with a note). Anything else — a snapshot that does not verify, damage with
/// valid records after it, a missing log, a record that does not fit — refuses the start,
/// naming file and offset, unless `repair` (`StateRepair`).
public enum StateDirectory {
    /// The newest snapshot.
    static let snapshotName = "snapshot"
    /// The snapshot before it, kept with the logs since it (`SnapshotRotation`).
    static let previousName = "snapshot.previous"
    /// A compaction's snapshot until it is verified and renamed.
    static let temporaryName = "snapshot.tmp"
    /// The file held with `flock` for the daemon's life.
    static let lockName = "lock"
    /// The folder `--repair` moves what it sets aside to (`DamagedFolder`).
    static let damagedName = "damaged"

    /// The log that follows the snapshot of `generation`.
    static func logName(_ generation: UInt64) -> String { "log." + String(generation) }

    /// The generations of the `log.<n>` files in the folder, ascending.
    static func logGenerations(_ path: String) -> [UInt64] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.compactMap { $0.hasPrefix("log.") ? UInt64($0.dropFirst(4)) : nil }.sorted()
    }

    /// Opens the data folder (creating it 0700, or tightening it), takes its lock, and
    /// recovers the state. Every file it creates or reopens is made 0600 (`PrivateFileMode`).
    /// - Parameters:
    ///   - path: the folder (`data_dir`).
    ///   - repair: rebuild from what still verifies instead of refusing (`StateRepair`).
    /// - Returns: the recovered state and the open log.
    /// - Throws: `PersistenceError` when the folder cannot be used or the files are damaged.
    public static func recover(path: String, repair: Bool) throws(PersistenceError) -> RecoveredState {
        let warnings = try PrivateFileMode.prepareFolder(path)
        let lock = try takeLock(path)
        do throws(PersistenceError) {
            var recovered = try recover(path: path, lock: lock, repair: repair)
            recovered.permissionWarnings = warnings
            return recovered
        } catch {
            close(lock)
            throw error
        }
    }

    private static func recover(path: String, lock: Int32, repair: Bool) throws(PersistenceError) -> RecoveredState {
        unlink(path + "/" + temporaryName)  // an interrupted compaction's; the files before it are whole
        for name in [snapshotName, previousName] { PrivateFileMode.tighten(path + "/" + name) }
        removeInterruptedLog(path)
        var notes: [String] = []
        var damaged = DamagedFolder(dataDirectory: path)
        let loader = ChainLoader(directory: path, logs: logGenerations(path), repair: repair)
        let load: ChainLoad
        if repair {
            load = try StateRepair(directory: path, loader: loader).run(damaged: &damaged, notes: &notes)
        } else {
            do throws(ChainFailure) {
                load = try loader.load(plainBase(path), damaged: &damaged, notes: &notes)
            } catch {
                throw error.refusal
            }
            SnapshotRotation.removeSuperseded(path)  // a compaction killed before it deleted them
        }
        let descriptor = try openLog(loader.path(load.generation), cutTo: load.logBytes, from: load.logFileBytes)
        _ = syncDirectory(path)
        return RecoveredState(
            entries: load.entries, revFloor: load.revFloor, generation: load.generation, logDescriptor: descriptor,
            logBytes: load.logBytes, snapshotBytes: load.snapshotBytes, lockDescriptor: lock, notes: notes,
            replayed: load.replayed, lostChannels: load.lost, damagedFolder: damaged.isCreated ? damaged.path : nil)
    }

    /// Deletes the empty newest log that a compaction killed before its snapshot became
    /// current leaves (it is created first), so the writer continues the log before it.
    ///
    /// Why: that log still holds every record since the base, so the next compaction is due
    /// again at once, as it was; continuing the empty one would wait for a whole new log and
    /// let interrupted compactions stack up logs and leave no `snapshot`. Nothing happens
    /// when the base's header cannot be read (that is for the loader to refuse or repair).
    private static func removeInterruptedLog(_ path: String) {
        guard let newest = logGenerations(path).last else { return }
        var base: UInt64 = 0
        if case .file(let name) = plainBase(path) {
            guard let generation = SnapshotFile.generation(ofFile: path + "/" + name) else { return }
            base = generation
        }
        let file = path + "/" + logName(newest)
        var info = stat()
        guard newest > base, stat(file, &info) == 0, info.st_size == 0 else { return }
        unlink(file)
        syncDirectory(path)
    }

    /// A plain start's base: `snapshot`, else `snapshot.previous`, else the empty state.
    private static func plainBase(_ path: String) -> SnapshotCandidate {
        for name in [snapshotName, previousName] where access(path + "/" + name, F_OK) == 0 { return .file(name) }
        return .empty
    }

    /// Opens the log to continue for appending, cutting a torn tail off first.
    private static func openLog(_ logPath: String, cutTo valid: Int, from size: Int) throws(PersistenceError) -> Int32 {
        let descriptor = PrivateFileMode.open(logPath, flags: O_WRONLY | O_APPEND | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw PersistenceError(logPath + ": cannot open for writing (" + String(cString: strerror(errno)) + ")")
        }
        if valid < size {
            guard ftruncate(descriptor, off_t(valid)) == 0, fdatasync(descriptor) == 0 else {
                close(descriptor)
                throw PersistenceError(logPath + ": cannot cut the damaged tail (" + String(cString: strerror(errno)) + ")")
            }
        }
        return descriptor
    }

    /// Takes an exclusive `flock` on `lock`, so two daemons never write one folder.
    private static func takeLock(_ path: String) throws(PersistenceError) -> Int32 {
        let descriptor = PrivateFileMode.open(path + "/" + lockName, flags: O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw PersistenceError("data_dir " + path + ": cannot open the lock file (" + String(cString: strerror(errno)) + ")")
        }
        // A lock can outlive its holder by a moment (a daemon still exiting, or a child that
        // forked and has not reached exec yet), so try for half a second before refusing.
        for _ in 0..<50 {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return descriptor }
            usleep(10_000)
        }
        close(descriptor)
        throw PersistenceError("data_dir " + path + " is in use by another heraldd")
    }

    /// `fsync` on the folder itself, so created, renamed and deleted names are durable.
    /// - Returns: whether it worked.
    @discardableResult
    static func syncDirectory(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return fsync(descriptor) == 0
    }
}
