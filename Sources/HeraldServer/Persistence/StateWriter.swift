import Foundation
import HeraldBroker
#if canImport(Glibc)
import Glibc
#endif

/// The thread that writes state records to the log, syncs it, and compacts it.
///
/// Why a thread of its own: `write(2)` and above all `fdatasync` can block for milliseconds,
/// and the event loop must never wait for the disk. The loop hands over each iteration's
/// records with `enqueue` (a mutex and a condition variable, held for an append); the thread
/// writes them with one `write(2)`, syncs per the policy, publishes the position whose
/// answers may now leave (`progress`) and wakes the loop through `notify` (a `uv_async_send`).
///
/// Shared state — `items`, `ackable`, `wantsSnapshot`, `stopping` — is guarded by
/// `condition`'s mutex, the only lock; everything else belongs to the writer thread.
public final class StateWriter: @unchecked Sendable {
    /// Work for the thread, in the order the loop produced it.
    enum Item {
        /// Records and the log position of the last one.
        case records([StateRecord], upTo: Int)
        /// The state after every record queued before it, to become the new snapshot.
        case snapshot([[UInt8]: StoredState], revFloor: Int)
    }

    private let condition = NSCondition()
    private var items: [Item] = []
    private var stopping = false
    private var finished = false
    private var ackable = 0
    private var wantsSnapshot = false

    // Writer-thread state.
    private let directory: String
    private let policy: FsyncPolicy
    private let compactMinBytes: Int
    private let logger: Logger
    private let notify: @Sendable () -> Void
    private var generation: UInt64
    private var logDescriptor: Int32
    private let lockDescriptor: Int32
    private var logBytes: Int
    private var snapshotBytes: Int
    private var written = 0
    private var unsynced = false
    private var lastSync = Date()
    private var snapshotRequested = false
    private var compactionBackoffUntil = Date.distantPast

    /// Creates the writer for a recovered folder; `start` launches its thread.
    /// - Parameters:
    ///   - directory: the data folder.
    ///   - recovered: what start-up recovered (the open log, its size, the generation).
    ///   - policy: the `fsync` policy.
    ///   - compactMinBytes: the log size below which no snapshot is taken.
    ///   - logger: for write errors and compaction lines.
    ///   - notify: wakes the loop; called from the writer thread, so it must be thread-safe.
    public init(directory: String, recovered: RecoveredState, policy: FsyncPolicy, compactMinBytes: Int,
                logger: Logger, notify: @escaping @Sendable () -> Void) {
        self.directory = directory
        self.policy = policy
        self.compactMinBytes = compactMinBytes
        self.logger = logger
        self.notify = notify
        self.generation = recovered.generation
        self.logDescriptor = recovered.logDescriptor
        self.lockDescriptor = recovered.lockDescriptor
        self.logBytes = recovered.logBytes
        self.snapshotBytes = recovered.snapshotBytes
    }

    /// Launches the writer thread.
    public func start() {
        let thread = Thread { [self] in run() }
        thread.name = "heraldd-state-writer"
        thread.start()
    }

    /// Queues records for the log, in order.
    /// - Parameters:
    ///   - records: the records of one loop iteration.
    ///   - upTo: the log position of the last one.
    public func enqueue(_ records: [StateRecord], upTo: Int) {
        condition.lock()
        items.append(.records(records, upTo: upTo))
        condition.signal()
        condition.unlock()
    }

    /// Queues a snapshot of the state after every record queued so far.
    /// - Parameters:
    ///   - entries: a copy of the store's entries.
    ///   - revFloor: the store's rev floor (`StateStore.revFloor`).
    public func enqueueSnapshot(_ entries: [[UInt8]: StoredState], revFloor: Int = 0) {
        condition.lock()
        items.append(.snapshot(entries, revFloor: revFloor))
        condition.signal()
        condition.unlock()
    }

    /// The highest log position whose answers may leave, and whether the writer wants a
    /// snapshot (cleared by reading it).
    public func takeProgress() -> (ackable: Int, wantsSnapshot: Bool) {
        condition.lock()
        defer { condition.unlock() }
        let wants = wantsSnapshot
        wantsSnapshot = false
        return (ackable, wants)
    }

    /// Writes what is queued, syncs, closes the files and ends the thread; blocks until done.
    public func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        while !finished { condition.wait() }
        condition.unlock()
    }

    // MARK: - The writer thread

    private func run() {
        while true {
            condition.lock()
            while items.isEmpty && !stopping {
                if policy == .everysec && unsynced {
                    let deadline = lastSync.addingTimeInterval(1)
                    if !condition.wait(until: deadline) { break }
                } else {
                    condition.wait()
                }
            }
            let batch = items
            items.removeAll()
            let isLast = stopping && batch.isEmpty
            condition.unlock()
            process(batch)
            if policy == .everysec && unsynced && Date().timeIntervalSince(lastSync) >= 1 { sync() }
            if isLast { break }
        }
        if unsynced { sync() }
        close(logDescriptor)
        close(lockDescriptor)
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    private func process(_ batch: [Item]) {
        guard !batch.isEmpty else { return }
        var buffer: [UInt8] = []
        var upTo = written
        for item in batch {
            switch item {
            case .records(let records, let last):
                for record in records { RecordFraming.append(record, to: &buffer) }
                upTo = last
            case .snapshot(let entries, let revFloor):
                appendToLog(buffer)
                buffer.removeAll()
                compact(entries, revFloor: revFloor)
            }
        }
        appendToLog(buffer)
        written = upTo
        if policy == .always && unsynced { sync() }
        var wants = false
        if !snapshotRequested && logBytes > max(snapshotBytes, compactMinBytes) && Date() >= compactionBackoffUntil {
            snapshotRequested = true
            wants = true
        }
        condition.lock()
        ackable = written
        if wants { wantsSnapshot = true }
        condition.unlock()
        notify()
    }

    /// Appends bytes to the log, retrying after errors: answers stay held until it worked.
    private func appendToLog(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                write(logDescriptor, raw.baseAddress.map { $0 + offset }, raw.count - offset)
            }
            if result > 0 {
                offset += result
                continue
            }
            if result < 0 && errno == EINTR { continue }
            logger.error("state log write failed; retrying, acknowledgements wait",
                         ["error": String(cString: strerror(errno)), "dir": directory])
            if isStopping { return }
            sleep(1)
        }
        logBytes += bytes.count
        unsynced = true
    }

    private var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }

    private func sync() {
        if fdatasync(logDescriptor) != 0 {
            logger.error("state log fdatasync failed", ["error": String(cString: strerror(errno))])
        }
        unsynced = false
        lastSync = Date()
    }

    /// Writes `entries` as the new snapshot and starts a new, empty log.
    ///
    /// Order matters for crashes: the snapshot is complete, synced and verified under its
    /// temporary name before the renames make it current (`SnapshotRotation`), and the new
    /// log only receives records after they are durable. The snapshot before it becomes
    /// `snapshot.previous`, and only logs older than that one are deleted, so a damaged
    /// snapshot can always be rebuilt around (`StateRepair`).
    ///
    /// A value is a `set` record, a tombstone a `delete`; a rev floor above 0 follows them
    /// as a `forget` of the empty name (no channel has it), last, so that loading applies
    /// every channel's record before the floor that would make it look stale.
    private func compact(_ entries: [[UInt8]: StoredState], revFloor: Int) {
        snapshotRequested = false
        if unsynced { sync() }
        let next = generation + 1
        let bytes = SnapshotFile.encode(entries, revFloor: revFloor, generation: next)
        let newLog = directory + "/" + StateDirectory.logName(next)
        // The new log exists (empty) before the snapshot naming it becomes current, so a
        // failure here leaves the old snapshot and log in charge and loses nothing.
        var descriptor: Int32 = -1
        if SnapshotRotation.writeVerified(directory, bytes) {
            descriptor = PrivateFileMode.open(newLog, flags: O_WRONLY | O_APPEND | O_TRUNC | O_CLOEXEC)
        }
        guard descriptor >= 0, StateDirectory.syncDirectory(directory),
              SnapshotRotation.promote(directory) else {
            logger.error("snapshot failed; keeping the log, next try in a minute",
                         ["error": String(cString: strerror(errno)), "dir": directory])
            if descriptor >= 0 {
                close(descriptor)
                unlink(newLog)
            }
            unlink(directory + "/" + StateDirectory.temporaryName)
            compactionBackoffUntil = Date().addingTimeInterval(60)
            return
        }
        // Past the rename the new snapshot is current: switch logs even if this sync fails.
        if !StateDirectory.syncDirectory(directory) {
            logger.error("fsync of the data folder failed", ["error": String(cString: strerror(errno))])
        }
        close(logDescriptor)
        logDescriptor = descriptor
        generation = next
        SnapshotRotation.removeSuperseded(directory)
        logger.info("compacted", ["snapshot_bytes": String(bytes.count), "log_bytes_before": String(logBytes),
                                        "channels": String(entries.count)])
        snapshotBytes = bytes.count
        logBytes = 0
    }
}
