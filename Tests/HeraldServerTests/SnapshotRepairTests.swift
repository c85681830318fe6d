import Foundation
import Testing
import HeraldBroker
@testable import HeraldServer
#if canImport(Glibc)
import Glibc
#endif

/// Issue 13, item 2: `--repair` after a damaged snapshot never half-reads it, never invents
/// state, never cuts a log whose records check out, and sets aside what it stops using.
@Suite struct SnapshotRepairTests {
    /// A data folder written by the real `StateWriter` in three phases, with two compactions:
    /// `snapshot` (generation 2), `snapshot.previous` (1), `log.1`, `log.2`. Lists get
    /// `append`s and `assign`s in the newest log (the issue's case), values get `set`s, and
    /// some channels are not touched after the newest snapshot at all.
    private struct Folder {
        let path: String
        /// The acknowledged state: every record was written and synced.
        let acknowledged: [[UInt8]: StoredState]
        /// Every state each channel ever had, by channel: what "existed" means.
        let history: [[UInt8]: [StoredState]]
        /// The pristine files, to restore before each damage.
        let files: [String: Data]

        func restore() throws {
            for name in try FileManager.default.contentsOfDirectory(atPath: path) where name != "lock" {
                try FileManager.default.removeItem(atPath: path + "/" + name)
            }
            for (name, data) in files { try data.write(to: URL(fileURLWithPath: path + "/" + name)) }
        }
    }

    private static func channel(_ name: String) -> [UInt8] { Array(name.utf8) }

    private func makeFolder(lists: Int = 8, values: Int = 8) throws -> Folder {
        let path = NSTemporaryDirectory() + "heraldd-repair-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let store = StateStore()
        var history: [[UInt8]: [StoredState]] = [:]
        let writer = try startWriter(path)
        var position = 0
        func write(_ records: [StateRecord]) {
            for record in records {
                #expect(store.apply(record) == .applied)
                if let state = store.state(of: record.channel) { history[record.channel, default: []].append(state) }
            }
            position += records.count
            writer.enqueue(records, upTo: position)
        }
        func next(_ name: String) -> Int { store.rev(of: Self.channel(name)) + 1 }
        write((0..<lists).map { k in
            .set(channel: Self.channel("l\(k)"), rev: next("l\(k)"), value: Array(#"["a0","a1","a2"]"#.utf8))
        } + (0..<values).map { k in .set(channel: Self.channel("v\(k)"), rev: next("v\(k)"), value: Array("\(k)".utf8)) })
        writer.enqueueSnapshot(store.snapshot(), revFloor: store.revFloor)
        write((0..<lists).map { k in .append(channel: Self.channel("l\(k)"), rev: next("l\(k)"), element: Array(#""b0""#.utf8)) })
        writer.enqueueSnapshot(store.snapshot(), revFloor: store.revFloor)
        write((0..<lists).map { k in .append(channel: Self.channel("l\(k)"), rev: next("l\(k)"), element: Array(#""b1""#.utf8)) })
        write((0..<lists / 2).map { k in
                .assign(channel: Self.channel("l\(k)"), rev: next("l\(k)"), index: 0, element: Array(#""A0""#.utf8))
            }
            + (0..<values / 2).map { k in .set(channel: Self.channel("v\(k)"), rev: next("v\(k)"), value: Array("\(100 + k)".utf8)) })
        writer.stop()
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: path) where name != "lock" {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: path + "/" + name))
        }
        #expect(Set(files.keys) == ["snapshot", "snapshot.previous", "log.1", "log.2"], "\(files.keys.sorted())")
        return Folder(path: path, acknowledged: store.entries, history: history, files: files)
    }

    private func startWriter(_ path: String) throws -> StateWriter {
        let recovered = try StateDirectory.recover(path: path, repair: false)
        let writer = StateWriter(directory: path, recovered: recovered, policy: .always, compactMinBytes: 1 << 30,
                                 logger: Logger(component: "test", level: .error), notify: {})
        writer.start()
        return writer
    }

    private func recover(_ path: String, repair: Bool = false) throws(PersistenceError) -> RecoveredState {
        let recovered = try StateDirectory.recover(path: path, repair: repair)
        close(recovered.logDescriptor)
        close(recovered.lockDescriptor)
        return recovered
    }

    private func size(_ file: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? -1
    }

    /// Every channel is exactly as acknowledged, or reported lost and absent; none holds a
    /// state it never had. Returns the channels neither exact nor named.
    private func unaccounted(_ recovered: RecoveredState, _ folder: Folder, offset: Int) -> Int {
        var unnamed = 0
        let lost = Set(recovered.lostChannels)
        for (name, state) in recovered.entries {
            let existed = folder.history[name]?.contains(state) ?? false
            #expect(existed, "offset \(offset): \(String(decoding: name, as: UTF8.self)) holds a state that never existed")
        }
        for (name, acked) in folder.acknowledged {
            let label = String(decoding: name, as: UTF8.self)
            if lost.contains(name) {
                #expect(recovered.entries[name] == nil, "offset \(offset): \(label) reported lost but half-built")
            } else if recovered.entries[name] == nil {
                unnamed += 1
            } else {
                #expect(recovered.entries[name] == acked, "offset \(offset): \(label) is not the acknowledged state")
            }
        }
        return unnamed
    }

    /// With the previous snapshot and the logs since it kept, a flipped byte at any offset of
    /// the newest snapshot is refused by a plain start (file and offset named), and
    /// `--repair` brings every channel back exactly as acknowledged, the log untouched, the
    /// damaged snapshot in `damaged/`, and the next plain start loads the same.
    @Test func aFlippedByteAnywhereInTheSnapshotRepairsToExactlyTheAcknowledgedState() throws {
        let folder = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let snapshot = try #require(folder.files["snapshot"])
        let logSize = try #require(folder.files["log.2"]).count
        for offset in 0..<snapshot.count {
            try folder.restore()
            var damaged = snapshot
            damaged[offset] ^= 0x20
            try damaged.write(to: URL(fileURLWithPath: folder.path + "/snapshot"))
            do {
                _ = try recover(folder.path)
                Issue.record("offset \(offset): a damaged snapshot was loaded")
            } catch {
                #expect(error.description.contains(folder.path + "/snapshot: damaged at byte "), "\(error)")
                #expect(error.description.contains("--repair"))
            }
            let repaired = try recover(folder.path, repair: true)
            #expect(repaired.entries == folder.acknowledged, "offset \(offset)")
            #expect(repaired.lostChannels.isEmpty, "offset \(offset)")
            #expect(size(folder.path + "/log.2") == logSize, "offset \(offset): the log was cut")
            let aside = try #require(repaired.damagedFolder)
            #expect(try Data(contentsOf: URL(fileURLWithPath: aside + "/snapshot")) == damaged)
            #expect(try recover(folder.path).entries == folder.acknowledged, "offset \(offset): next plain start")
        }
    }

    /// With nothing but the damaged snapshot and the newest log left, `--repair` rebuilds from
    /// the log alone: every channel exactly as acknowledged or reported lost (at most the one
    /// record the damage made unreadable goes unnamed), never a state that never existed;
    /// the log is set aside byte for byte, and the next plain start serves the same.
    @Test func withNoGoodSnapshotLeftEveryChannelIsExactOrReportedLost() throws {
        let folder = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let snapshot = try #require(folder.files["snapshot"])
        let log = try #require(folder.files["log.2"])
        for offset in 0..<snapshot.count {
            try folder.restore()
            try FileManager.default.removeItem(atPath: folder.path + "/snapshot.previous")
            try FileManager.default.removeItem(atPath: folder.path + "/log.1")
            var damaged = snapshot
            damaged[offset] ^= 0x20
            try damaged.write(to: URL(fileURLWithPath: folder.path + "/snapshot"))
            #expect(throws: PersistenceError.self, "offset \(offset)") { try recover(folder.path) }
            let repaired = try recover(folder.path, repair: true)
            #expect(unaccounted(repaired, folder, offset: offset) <= 1, "offset \(offset)")
            #expect(!repaired.lostChannels.isEmpty, "offset \(offset): the lists' appends need their lost base")
            let aside = try #require(repaired.damagedFolder)
            #expect(try Data(contentsOf: URL(fileURLWithPath: aside + "/log.2")) == log, "offset \(offset)")
            let again = try recover(folder.path)
            #expect(again.entries == repaired.entries && again.revFloor == repaired.revFloor, "offset \(offset)")
        }
    }

    /// The issue's case: the damaged snapshot lost a list and the log holds an `assign` on it.
    /// The log is not cut (its size on disk is unchanged), nothing is invented, and the
    /// folder is usable by a plain start afterwards.
    @Test func anAssignOnAListTheDamagedSnapshotLostDoesNotCutTheLog() throws {
        let folder = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let snapshot = try #require(folder.files["snapshot"])
        let logSize = try #require(folder.files["log.2"]).count
        // Damage the record of l0 (it has an append and an assign in log.2).
        let at = try #require(snapshot.range(of: Data("l0".utf8))).lowerBound
        var damaged = snapshot
        damaged[at] ^= 0x01
        try damaged.write(to: URL(fileURLWithPath: folder.path + "/snapshot"))
        let repaired = try recover(folder.path, repair: true)
        #expect(repaired.entries == folder.acknowledged)
        #expect(repaired.entries[Self.channel("l0")]?.list?.count == 5)
        #expect(size(folder.path + "/log.2") == logSize, "the undamaged log keeps every byte")
        #expect(try recover(folder.path).entries == folder.acknowledged)

        // And with no previous snapshot left: l0 is reported lost, not rebuilt as ["A0","b1"].
        try folder.restore()
        try FileManager.default.removeItem(atPath: folder.path + "/snapshot.previous")
        try FileManager.default.removeItem(atPath: folder.path + "/log.1")
        try damaged.write(to: URL(fileURLWithPath: folder.path + "/snapshot"))
        let alone = try recover(folder.path, repair: true)
        #expect(alone.lostChannels.contains(Self.channel("l0")))
        #expect(alone.entries[Self.channel("l0")] == nil)
        let aside = try #require(alone.damagedFolder)
        #expect(size(aside + "/log.2") == logSize, "set aside whole, not cut")
    }

    /// What `--repair` sets aside lands in `damaged/<UTC time>/` with a report, files 0600 and
    /// folders 0700, and the next plain start works.
    @Test func setAsideFilesLandInDamagedAndTheNextPlainStartWorks() throws {
        let folder = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let snapshot = try #require(folder.files["snapshot"])
        var damaged = snapshot
        damaged[snapshot.count / 2] ^= 0xFF
        try damaged.write(to: URL(fileURLWithPath: folder.path + "/snapshot"))
        #expect(throws: PersistenceError.self) { try recover(folder.path) }
        let repaired = try recover(folder.path, repair: true)
        let aside = try #require(repaired.damagedFolder)
        let stamp = try #require(aside.split(separator: "/").last)
        #expect(aside.hasPrefix(folder.path + "/damaged/") && stamp.count == 20 && stamp.hasSuffix("Z"), "\(aside)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: aside).sorted() == ["report.txt", "snapshot"])
        let report = try String(contentsOfFile: aside + "/report.txt", encoding: .utf8)
        #expect(report.contains("snapshot: damaged at byte"), "\(report)")
        for (file, mode) in [(folder.path + "/damaged", 0o700), (aside, 0o700), (aside + "/snapshot", 0o600),
                             (aside + "/report.txt", 0o600)] {
            var info = stat()
            #expect(stat(file, &info) == 0 && Int(info.st_mode & 0o777) == mode, "\(file)")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/snapshot"))
        let again = try recover(folder.path)
        #expect(again.entries == folder.acknowledged && again.notes.isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: aside + "/snapshot")) == damaged, "never deleted")
    }

    /// A compaction killed between its two renames leaves no `snapshot`, the new empty log and
    /// `snapshot.tmp`: a plain start loads `snapshot.previous` and every log since, drops the
    /// empty log so the next compaction is due at once, and the next compaction rotates.
    @Test func aCompactionKilledBetweenItsRenamesLosesNothing() throws {
        let folder = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let path = folder.path
        #expect(rename(path + "/snapshot", path + "/snapshot.previous") == 0)
        try Data().write(to: URL(fileURLWithPath: path + "/log.3"))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path + "/snapshot.tmp"))
        let recovered = try recover(path)
        #expect(recovered.entries == folder.acknowledged)
        #expect(recovered.generation == 2 && recovered.notes.isEmpty)
        var names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        #expect(names == ["lock", "log.2", "snapshot.previous"], "log.1 superseded, log.3 and the tmp gone: \(names)")
        let writer = try startWriter(path)
        writer.enqueueSnapshot(folder.acknowledged)
        writer.stop()
        names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        #expect(names == ["lock", "log.2", "log.3", "snapshot", "snapshot.previous"], "\(names)")
        #expect(try recover(path).entries == folder.acknowledged)
    }

    /// Compaction keeps the snapshot before the newest and the logs since it, and a
    /// compaction after a repair rotates normally.
    @Test func compactionAfterARepairKeepsAVerifiedFallback() throws {
        let folder = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        var damaged = try #require(folder.files["snapshot"])
        damaged[30] ^= 0x01
        try damaged.write(to: URL(fileURLWithPath: folder.path + "/snapshot"))
        _ = try recover(folder.path, repair: true)
        let writer = try startWriter(folder.path)
        writer.enqueueSnapshot(folder.acknowledged)
        writer.stop()
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(names == ["damaged", "lock", "log.1", "log.2", "log.3", "snapshot", "snapshot.previous"], "\(names)")
        #expect(try recover(folder.path).entries == folder.acknowledged)
        // The new snapshot damaged too: the previous one (generation 1) and its logs still rebuild it.
        var newest = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/snapshot"))
        newest[newest.count - 3] ^= 0x01
        try newest.write(to: URL(fileURLWithPath: folder.path + "/snapshot"))
        #expect(try recover(folder.path, repair: true).entries == folder.acknowledged)
    }
}
