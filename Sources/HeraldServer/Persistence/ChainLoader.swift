import Foundation
import HeraldBroker

/// Rebuilds the state from one base (a verified snapshot, or the empty state of generation
/// 0) and every log from the base's generation to the newest, or from the logs alone.
///
/// Only the newest log may end in a torn or damaged tail (cut, as after any crash); an
/// older log was closed whole by a compaction, so damage anywhere in it breaks the chain.
struct ChainLoader {
    /// The data folder.
    let directory: String
    /// The generations of the logs present, ascending.
    let logs: [UInt64]
    /// Whether this is `--repair`: cut middle damage of the newest log (after copying it to
    /// `damaged/`) and let records that need a lost base report their channel lost.
    let repair: Bool

    /// Loads `candidate` and the logs after it.
    /// - Parameters:
    ///   - candidate: the base.
    ///   - damaged: where a log is copied before its middle damage is cut.
    ///   - notes: what recovery did, for the log and the repair report.
    /// - Returns: the rebuilt state.
    /// - Throws: `ChainFailure` when this base cannot rebuild the state.
    func load(
        _ candidate: SnapshotCandidate, damaged: inout DamagedFolder, notes: inout [String]
    ) throws(ChainFailure) -> ChainLoad {
        let (store, base, snapshotBytes) = try loadBase(candidate)
        let current = max(base, logs.last ?? base)
        var rebuild = StateRebuild(base: store)
        var replay = (replayed: 0, valid: 0, fileBytes: 0)
        for generation in base...current {
            let isLast = generation == current
            guard logs.contains(generation) || (isLast && generation == base) else {
                throw .logMissing(file: path(generation))
            }
            replay = try self.replay(generation, isLast: isLast, gapsAllowed: false, into: &rebuild,
                                     damaged: &damaged, notes: &notes, replayed: replay.replayed)
        }
        return finish(rebuild, generation: current, replay: replay, snapshotBytes: snapshotBytes)
    }

    /// Rebuilds from the logs alone, no base known: channels no record rebuilds from nothing
    /// are reported lost, and so are `noted` ones (named only by a damaged snapshot).
    /// - Parameters:
    ///   - noted: channels and revs read from a snapshot that could not be used.
    ///   - damaged: where a log is copied before its middle damage is cut.
    ///   - notes: what recovery did.
    /// - Returns: the rebuilt state; its `lost` is never empty when `noted` is not rebuilt.
    /// - Throws: `ChainFailure.io` when a log cannot be copied.
    func loadAlone(
        noting noted: [[UInt8]: Int], damaged: inout DamagedFolder, notes: inout [String]
    ) throws(ChainFailure) -> ChainLoad {
        var rebuild = StateRebuild(base: nil)
        rebuild.note(noted)
        var replay = (replayed: 0, valid: 0, fileBytes: 0)
        for generation in logs {
            replay = try self.replay(generation, isLast: generation == logs.last, gapsAllowed: true, into: &rebuild,
                                     damaged: &damaged, notes: &notes, replayed: replay.replayed)
        }
        return finish(rebuild, generation: logs.last ?? 0, replay: replay, snapshotBytes: 0)
    }

    /// `log.<generation>` in the data folder.
    func path(_ generation: UInt64) -> String { directory + "/" + StateDirectory.logName(generation) }

    /// The rebuild's result as a `ChainLoad` for the log `generation`.
    private func finish(
        _ rebuild: StateRebuild, generation: UInt64, replay: (replayed: Int, valid: Int, fileBytes: Int),
        snapshotBytes: Int
    ) -> ChainLoad {
        let (entries, revFloor, lost) = rebuild.finish()
        return ChainLoad(entries: entries, revFloor: revFloor, generation: generation, logBytes: replay.valid,
                         logFileBytes: replay.fileBytes, snapshotBytes: snapshotBytes, replayed: replay.replayed,
                         lost: lost)
    }

    /// The verified base's state, generation and size.
    private func loadBase(_ candidate: SnapshotCandidate) throws(ChainFailure) -> (StateStore, UInt64, Int) {
        guard case .file(let name) = candidate else { return (StateStore(), 0, 0) }
        let file = directory + "/" + name
        let bytes = Array(FileManager.default.contents(atPath: file) ?? Data())
        let contents: SnapshotContents
        switch SnapshotFile.verify(bytes) {
        case .failure(let damage): throw .snapshotDamaged(file: file, damage: damage)
        case .success(let verified): contents = verified
        }
        let store = StateStore()
        for (offset, record) in contents.records where store.apply(record) != .applied {
            throw .snapshotDamaged(file: file, damage: SnapshotDamage(offset: offset, reason: "record repeats a channel"))
        }
        return (store, contents.generation, bytes.count)
    }

    /// Applies one log's valid records; returns the running count, valid length and file length.
    private func replay(
        _ generation: UInt64, isLast: Bool, gapsAllowed: Bool, into rebuild: inout StateRebuild,
        damaged: inout DamagedFolder, notes: inout [String], replayed: Int
    ) throws(ChainFailure) -> (replayed: Int, valid: Int, fileBytes: Int) {
        let file = path(generation)
        let bytes = Array(FileManager.default.contents(atPath: file) ?? Data())
        let scan = bytes.withUnsafeBytes { LogScan.scan($0) }
        var count = replayed
        for (offset, record) in scan.records {
            if rebuild.apply(record) == .needsLostBase && !repair { throw .recordDoesNotFit(file: file, offset: offset) }
            count += 1
        }
        guard let damage = scan.damageAt else { return (count, bytes.count, bytes.count) }
        try handleDamage(file, at: damage, of: bytes.count, scan: scan, isLast: isLast, gapsAllowed: gapsAllowed,
                         damaged: &damaged, notes: &notes)
        if !isLast { rebuild.gap() }
        return (count, damage, bytes.count)
    }

    /// Accepts a torn tail of the newest log, cuts middle damage under `--repair` (after
    /// copying the log aside), lets an older log's damage open a gap in a logs-alone
    /// rebuild, and refuses the rest.
    private func handleDamage(
        _ file: String, at damage: Int, of size: Int, scan: LogScan, isLast: Bool, gapsAllowed: Bool,
        damaged: inout DamagedFolder, notes: inout [String]
    ) throws(ChainFailure) {
        let dropping = size - damage
        if isLast && !scan.damageIsInTheMiddle {
            notes.append(file + ": torn or damaged tail at byte " + String(damage) + "; cut " + String(dropping) + " bytes")
            return
        }
        guard repair && (isLast || gapsAllowed) else { throw .logDamaged(file: file, offset: damage, dropping: dropping) }
        do throws(PersistenceError) { try damaged.copy(file) } catch { throw .io(error) }
        notes.append(file + ": damaged at byte " + String(damage) + "; --repair "
            + (isLast ? "cut the log there, dropping " : "skipped the rest of this closed log, ")
            + String(dropping) + " bytes (the whole log is in " + damaged.path + ")")
    }
}
