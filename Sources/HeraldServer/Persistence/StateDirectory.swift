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
    /// The snapshot's generation; the log in use is `log.<generation>`.
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
}

/// The data folder: `snapshot`, `log.<generation>`, `lock`, and the start-up recovery.
///
/// Recovery: load the snapshot (none: empty state, generation 0), replay `log.<generation>`
/// through `StateStore.apply`, cut a torn or damaged tail (with a note), refuse damage in the
/// middle unless `repair` (then cut there too), delete leftovers of an interrupted compaction.
public enum StateDirectory {
    static let snapshotName = "snapshot"
    static let temporaryName = "snapshot.tmp"
    static let lockName = "lock"
    static let magic: [UInt8] = Array("HRLDSNP1".utf8)
    /// `magic | generation u64 LE | CRC32C of both u32 LE`: the generation names the log to
    /// replay, so it is checksummed like every record.
    static let headerBytes = 20

    /// The snapshot header for `generation`.
    static func snapshotHeader(_ generation: UInt64) -> [UInt8] {
        var bytes = magic
        RecordFraming.putLE(generation, bytes: 8, to: &bytes)
        RecordFraming.putLE(UInt64(CRC32C.checksum(bytes)), bytes: 4, to: &bytes)
        return bytes
    }

    static func logName(_ generation: UInt64) -> String { "log." + String(generation) }

    /// Opens the data folder (creating it 0700, or tightening it), takes its lock, and
    /// recovers the state. Every file it creates or reopens is made 0600 (`PrivateFileMode`).
    /// - Parameters:
    ///   - path: the folder (`data_dir`).
    ///   - repair: cut damage in the middle of the log (or snapshot) instead of refusing.
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
        var notes: [String] = []
        let store = StateStore()
        var generation: UInt64 = 0
        var snapshotBytes = 0
        PrivateFileMode.tighten(path + "/" + snapshotName)
        if let snapshot = FileManager.default.contents(atPath: path + "/" + snapshotName) {
            snapshotBytes = snapshot.count
            generation = try loadSnapshot(Array(snapshot), into: store, path: path, repair: repair, notes: &notes)
        }
        let logPath = path + "/" + logName(generation)
        let log = Array(FileManager.default.contents(atPath: logPath) ?? Data())
        let (validLength, replayed) = try replayLog(log, into: store, path: logPath, repair: repair, notes: &notes)
        let descriptor = PrivateFileMode.open(logPath, flags: O_WRONLY | O_APPEND | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw PersistenceError(logPath + ": cannot open for writing (" + String(cString: strerror(errno)) + ")")
        }
        if validLength < log.count {
            guard ftruncate(descriptor, off_t(validLength)) == 0, fdatasync(descriptor) == 0 else {
                close(descriptor)
                throw PersistenceError(logPath + ": cannot cut the damaged tail (" + String(cString: strerror(errno)) + ")")
            }
        }
        removeLeftovers(in: path, keeping: generation)
        _ = syncDirectory(path)
        return RecoveredState(
            entries: store.entries, revFloor: store.revFloor, generation: generation, logDescriptor: descriptor,
            logBytes: validLength, snapshotBytes: snapshotBytes, lockDescriptor: lock, notes: notes, replayed: replayed)
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

    /// Applies a snapshot's records; returns its generation.
    static func loadSnapshot(
        _ bytes: [UInt8], into store: StateStore, path: String, repair: Bool, notes: inout [String]
    ) throws(PersistenceError) -> UInt64 {
        let name = path + "/" + snapshotName
        let result: Result<UInt64, PersistenceError> = bytes.withUnsafeBytes { raw in
            guard raw.count >= headerBytes, Array(raw[0..<8]) == magic,
                  UInt32(RecordFraming.readLE(raw, at: 16, bytes: 4))
                    == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<16])) else {
                return .failure(PersistenceError(name + ": not a heraldd snapshot or a damaged header"
                    + "; move it away to start without it"))
            }
            let generation = RecordFraming.readLE(raw, at: 8, bytes: 8)
            var offset = headerBytes
            var count = 0
            while offset < raw.count {
                guard let range = RecordFraming.payload(in: raw, at: offset) else { break }
                let payload = UnsafeRawBufferPointer(rebasing: raw[range])
                if payload.count == 9, payload[0] == RecordFraming.endMarker {
                    let expected = Int(RecordFraming.readLE(payload, at: 1, bytes: 8))
                    if expected == count && range.upperBound == raw.count { return .success(generation) }
                    break
                }
                guard let record = StateRecord.decode(payload), store.apply(record) == .applied else { break }
                count += 1
                offset = range.upperBound
            }
            let problem = name + ": damaged at byte " + String(offset)
            guard repair else {
                return .failure(PersistenceError(problem + "; start with --repair to keep the " + String(count)
                    + " records before it (and drop the rest)"))
            }
            notes.append(problem + "; --repair kept the " + String(count) + " records before it")
            return .success(generation)
        }
        return try result.get()
    }

    /// Replays a log; returns the valid length and the number of records applied.
    static func replayLog(
        _ bytes: [UInt8], into store: StateStore, path: String, repair: Bool, notes: inout [String]
    ) throws(PersistenceError) -> (Int, Int) {
        var scan = bytes.withUnsafeBytes { LogScan.scan($0) }
        var replayed = 0
        for (offset, record) in scan.records {
            if store.apply(record) == .invalid {
                // A CRC-valid record that does not fit the state: the log is not what was written.
                scan.damageAt = offset
                scan.damageIsInTheMiddle = true
                scan.validEnd = offset
                break
            }
            replayed += 1
        }
        guard let damage = scan.damageAt else { return (bytes.count, replayed) }
        let dropped = bytes.count - damage
        if scan.damageIsInTheMiddle {
            guard repair else {
                throw PersistenceError(path + ": damaged at byte " + String(damage) + " with valid records after it"
                    + "; refusing to start. Start with --repair to cut the log there (dropping "
                    + String(dropped) + " bytes)")
            }
            notes.append(path + ": damaged at byte " + String(damage) + "; --repair cut the log there, dropping "
                + String(dropped) + " bytes")
        } else {
            notes.append(path + ": torn or damaged tail at byte " + String(damage) + "; cut " + String(dropped) + " bytes")
        }
        return (damage, replayed)
    }

    /// Deletes `snapshot.tmp` and logs of other generations, left by an interrupted compaction.
    private static func removeLeftovers(in path: String, keeping generation: UInt64) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        for name in names where name == temporaryName || (name.hasPrefix("log.") && name != logName(generation)) {
            unlink(path + "/" + name)
        }
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
