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
/// A write that fails (a full disk) is retried every `retryInterval`, from where it stopped,
/// until it succeeds or the daemon stops; meanwhile the writer reports the fault and wakes
/// the loop at each attempt, so the loop refuses new changes and times out held answers,
/// and it logs the fault once and once more when writing works again.
///
/// Shared state — `items`, `ackable`, `wantsSnapshot`, `stopping`, `fault`, `backlogBytes` —
/// is guarded by `condition`'s mutex, the only lock; everything else belongs to the writer
/// thread.
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
    /// Why the log cannot be written now, for the loop (`WriterProgress.fault`).
    private var fault: String?
    /// Bytes of records enqueued and not yet written (`StateRecord.logBytes`).
    private var backlogBytes = 0

    /// How long the writer waits between attempts while the log cannot be written.
    static let retryInterval: TimeInterval = 0.25

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
    /// Set when the daemon stopped while a write failed: nothing more is appended, since a
    /// record after a partly written one would turn a torn tail into damage in the middle.
    private var abandoned = false
    /// Whether `fault` is set, read without the lock on every successful write.
    private var isFaulted = false
    /// Set when fdatasync failed: the fault stays and nothing more is acknowledged (`sync`).
    private var syncFailed = false

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
        let bytes = records.reduce(0) { $0 + $1.logBytes }
        condition.lock()
        backlogBytes += bytes
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

    /// The highest log position whose answers may leave, whether the writer wants a
    /// snapshot (cleared by reading it), its fault and its backlog.
    public func takeProgress() -> WriterProgress {
        condition.lock()
        defer { condition.unlock() }
        let wants = wantsSnapshot
        wantsSnapshot = false
        return WriterProgress(ackable: ackable, wantsSnapshot: wants, fault: fault, backlogBytes: backlogBytes)
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
        reportUnwrittenAtStop()
        close(logDescriptor)
        close(lockDescriptor)
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// Writes one batch; when the daemon stops before the log could take it, nothing of it
    /// is acknowledged.
    private func process(_ batch: [Item]) {
        guard !batch.isEmpty else { return }
        var buffer: [UInt8] = []
        var upTo = written
        var bytes = 0
        for item in batch {
            switch item {
            case .records(let records, let last):
                for record in records {
                    RecordFraming.append(record, to: &buffer)
                    bytes += record.logBytes
                }
                upTo = last
            case .snapshot(let entries, let revFloor):
                guard appendToLog(buffer) else { return }
                buffer.removeAll()
                compact(entries, revFloor: revFloor)
            }
        }
        guard appendToLog(buffer) else { return }
        written = upTo
        if policy == .always && unsynced { sync() }
        guard !syncFailed else { return }
        var wants = false
        if !snapshotRequested && logBytes > max(snapshotBytes, compactMinBytes) && Date() >= compactionBackoffUntil {
            snapshotRequested = true
            wants = true
        }
        condition.lock()
        ackable = written
        backlogBytes -= bytes
        if wants { wantsSnapshot = true }
        condition.unlock()
        notify()
    }

    /// Appends bytes to the log, retrying from where it stopped while that fails.
    ///
    /// A failed attempt may leave part of a record at the end of the log; the next attempt
    /// completes it, and if the daemon stops first, start-up cuts it as a torn tail.
    /// - Returns: whether every byte was written; false only when the daemon stops first.
    private func appendToLog(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return true }
        guard !abandoned else { return false }
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                write(logDescriptor, raw.baseAddress.map { $0 + offset }, raw.count - offset)
            }
            if result > 0 {
                offset += result
                continue
            }
            let code = result < 0 ? errno : ENOSPC
            if code == EINTR { continue }
            noteFault(code)
            if waitBeforeRetry() {
                abandoned = true
                return false
            }
        }
        clearFault()
        logBytes += bytes.count
        unsynced = true
        return true
    }

    /// Records the fault, logging it the first time, and wakes the loop so it refuses new
    /// changes and gives up on held answers that waited too long.
    private func noteFault(_ code: Int32) {
        let reason = code == ENOSPC || code == EDQUOT
            ? "data folder full" : "data folder not writable (" + String(cString: strerror(code)) + ")"
        condition.lock()
        // A failed fdatasync's fault says to restart; a later write error must not hide it.
        let isNew = !syncFailed && fault != reason
        if !syncFailed { fault = reason }
        condition.unlock()
        isFaulted = true
        if isNew {
            logger.error(reason + "; state changes are refused until the log can be written, retrying",
                         ["error": String(cString: strerror(code)), "dir": directory])
        }
        notify()
    }

    /// Clears a fault after a successful write, logging that writing resumed.
    private func clearFault() {
        guard isFaulted, !syncFailed else { return }
        isFaulted = false
        condition.lock()
        fault = nil
        condition.unlock()
        logger.info("data folder writable again; state changes resume", ["dir": directory])
        notify()
    }

    /// Waits `retryInterval`, or less when the daemon stops.
    /// - Returns: whether the daemon is stopping (then the writer gives up).
    private func waitBeforeRetry() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if !stopping { _ = condition.wait(until: Date().addingTimeInterval(Self.retryInterval)) }
        return stopping
    }

    /// Logs what a stop while the folder was at fault left unwritten: those changes were
    /// never acknowledged (their answers said `unavailable` or `shutting_down`) and are lost.
    private func reportUnwrittenAtStop() {
        condition.lock()
        let waiting = backlogBytes
        condition.unlock()
        guard abandoned else { return }
        logger.error("stopped with state changes the data folder did not take; they are lost",
                     ["unwritten_bytes": String(waiting), "dir": directory])
    }

    /// fdatasyncs the log; a failure is a fault that lasts until a restart.
    ///
    /// Why not retry: after a failed fdatasync the kernel may have dropped the dirty pages
    /// and reports the error once, so a second call can succeed without the data. The
    /// writer then acknowledges nothing more and the loop refuses changes; a restart
    /// re-reads the log and cuts what did not reach the disk.
    private func sync() {
        if fdatasync(logDescriptor) != 0 {
            let error = String(cString: strerror(errno))
            logger.error("state log fdatasync failed; state changes are refused until heraldd restarts",
                         ["error": error, "dir": directory])
            syncFailed = true
            isFaulted = true
            condition.lock()
            fault = "data folder not writable (fdatasync: " + error + "); restart heraldd"
            condition.unlock()
            notify()
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
