import Foundation
import HeraldBroker
#if canImport(Glibc)
import Glibc
#endif

/// `--repair`: rebuilds the state from the best base that still verifies, never from part
/// of a snapshot, and never cuts a log whose records check out.
///
/// Order: `snapshot` and the logs after it; else `snapshot.previous` and the logs after it;
/// else the empty state and `log.0` onward (before the second compaction); else the logs
/// alone. A snapshot that does not verify is moved to `damaged/<time>/`. When the result is
/// not exact (logs alone, or records that need a base nobody has), the channels it could not
/// rebuild are reported lost, the rebuilt state is written as a new verified snapshot with
/// an empty log, and every file it supersedes is moved to `damaged/` unchanged, so the next
/// plain start loads exactly what this one served.
struct StateRepair {
    /// The data folder.
    let directory: String
    /// The loader, in repair mode.
    let loader: ChainLoader

    /// Runs the repair.
    /// - Parameters:
    ///   - damaged: where set-aside files go.
    ///   - notes: what it did, for the log and `report.txt`.
    /// - Returns: the state to serve, with its lost channels.
    /// - Throws: `PersistenceError` when files cannot be moved or written (nothing is deleted).
    func run(damaged: inout DamagedFolder, notes: inout [String]) throws(PersistenceError) -> ChainLoad {
        var noted: [[UInt8]: Int] = [:]
        var unreadable: [String] = []
        for (index, candidate) in candidates().enumerated() {
            switch attempt(candidate, damaged: &damaged, notes: &notes) {
            case .success(let load):
                if index > 0 || !load.lost.isEmpty {
                    notes.append("--repair rebuilt the state from " + candidate.label + " and the logs after it")
                }
                guard load.lost.isEmpty else { return try install(load, damaged: &damaged, notes: &notes) }
                try report(load, unreadable: [], damaged: &damaged, notes: notes)
                return load
            case .failure(let error):
                notes.append(candidate.label + " cannot be used: " + error.summary)
                guard case .snapshotDamaged(let file, _) = error else { continue }
                try setAsideSnapshot(file, noted: &noted, unreadable: &unreadable, damaged: &damaged, notes: &notes)
            }
        }
        notes.append("--repair found no usable snapshot; rebuilding from the logs alone")
        for name in [StateDirectory.snapshotName, StateDirectory.previousName] where noted.isEmpty {
            noted = SnapshotFile.salvageNames(contents(name)).channels
        }
        let load: ChainLoad
        do throws(ChainFailure) {
            load = try loader.loadAlone(noting: noted, damaged: &damaged, notes: &notes)
        } catch {
            throw error.refusal
        }
        return try install(load, unreadable: unreadable, damaged: &damaged, notes: &notes)
    }

    /// Loads one base and its logs, the failure as a value.
    private func attempt(
        _ candidate: SnapshotCandidate, damaged: inout DamagedFolder, notes: inout [String]
    ) -> Result<ChainLoad, ChainFailure> {
        do throws(ChainFailure) {
            return .success(try loader.load(candidate, damaged: &damaged, notes: &notes))
        } catch {
            return .failure(error)
        }
    }

    /// The bases to try, newest first.
    private func candidates() -> [SnapshotCandidate] {
        var list: [SnapshotCandidate] = []
        for name in [StateDirectory.snapshotName, StateDirectory.previousName]
        where access(directory + "/" + name, F_OK) == 0 {
            list.append(.file(name))
        }
        if loader.logs.first == 0 || (list.isEmpty && loader.logs.isEmpty) { list.append(.empty) }
        return list
    }

    /// A file of the data folder's bytes (empty when missing).
    private func contents(_ name: String) -> [UInt8] {
        Array(FileManager.default.contents(atPath: directory + "/" + name) ?? Data())
    }

    /// Moves a snapshot that does not verify to `damaged/`, first reading the channel names
    /// it still shows (the newest such snapshot's only) to report them if not rebuilt.
    private func setAsideSnapshot(
        _ file: String, noted: inout [[UInt8]: Int], unreadable: inout [String], damaged: inout DamagedFolder,
        notes: inout [String]
    ) throws(PersistenceError) {
        if noted.isEmpty && unreadable.isEmpty {
            let salvage = SnapshotFile.salvageNames(Array(FileManager.default.contents(atPath: file) ?? Data()))
            noted = salvage.channels
            unreadable.append(file + ": " + (salvage.unreadable.map(String.init) ?? "an unknown number of")
                + " records could not be read (their channels are lost unless rebuilt from the logs)")
        }
        try damaged.setAside(file)
        notes.append(file + ": set aside in " + damaged.path)
    }

    /// Writes the rebuilt state as a new verified snapshot with an empty log, above every
    /// generation present, then moves every file it supersedes to `damaged/`.
    private func install(
        _ load: ChainLoad, unreadable: [String] = [], damaged: inout DamagedFolder, notes: inout [String]
    ) throws(PersistenceError) -> ChainLoad {
        let generation = max(load.generation, loader.logs.last ?? 0) + 1
        let bytes = SnapshotFile.encode(load.entries, revFloor: load.revFloor, generation: generation)
        let logPath = loader.path(generation)
        let log = PrivateFileMode.open(logPath, flags: O_WRONLY | O_TRUNC | O_CLOEXEC)
        if log >= 0 { close(log) }
        let current = directory + "/" + StateDirectory.snapshotName
        if access(current, F_OK) == 0 { try damaged.setAside(current) }
        guard log >= 0, SnapshotRotation.writeVerified(directory, bytes),
              SnapshotRotation.promote(directory, keepPrevious: false), StateDirectory.syncDirectory(directory) else {
            throw PersistenceError(directory + ": cannot write the rebuilt snapshot ("
                + String(cString: strerror(errno)) + "); every file is still in place or in " + damaged.path)
        }
        try setAsideSuperseded(below: generation, damaged: &damaged)
        notes.append("--repair wrote a new snapshot (generation " + String(generation) + ") of the "
            + String(load.entries.count) + " channels it rebuilt; " + String(load.lost.count)
            + " could not be rebuilt and are reported lost; superseded files are in " + damaged.path)
        var installed = load
        installed.generation = generation
        installed.logBytes = 0
        installed.logFileBytes = 0
        installed.snapshotBytes = bytes.count
        try report(installed, unreadable: unreadable, damaged: &damaged, notes: notes)
        return installed
    }

    /// Moves `snapshot.previous` and every log older than `generation` to `damaged/`.
    private func setAsideSuperseded(below generation: UInt64, damaged: inout DamagedFolder) throws(PersistenceError) {
        let previous = directory + "/" + StateDirectory.previousName
        if access(previous, F_OK) == 0 { try damaged.setAside(previous) }
        for old in StateDirectory.logGenerations(directory) where old < generation {
            try damaged.setAside(loader.path(old))
        }
        StateDirectory.syncDirectory(directory)
    }

    /// Writes `report.txt` when anything was set aside or lost: the notes, then one
    /// `lost channel: <name>` line per channel not rebuilt.
    private func report(
        _ load: ChainLoad, unreadable: [String], damaged: inout DamagedFolder, notes: [String]
    ) throws(PersistenceError) {
        guard damaged.isCreated || !load.lost.isEmpty else { return }
        let lost = load.lost.map { "lost channel: " + String(decoding: $0, as: UTF8.self) }
        try damaged.writeReport(notes + unreadable + lost)
    }
}
