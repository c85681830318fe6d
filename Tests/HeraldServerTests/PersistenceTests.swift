import Foundation
import Testing
import HeraldBroker
@testable import HeraldServer
#if canImport(Glibc)
import Glibc
#endif

/// The state files: checksums, recovery from torn and damaged files, compaction (issue 6).
@Suite struct PersistenceTests {
    @Test func crc32cMatchesKnownVectors() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
        #expect(CRC32C.checksum((0..<32).map { UInt8(31 - $0) }) == 0x113F_DB5C)
        #expect(CRC32C.checksum([]) == 0)
        let text = Array("The quick brown fox jumps over the lazy dog, twice over.".utf8)
        let whole = CRC32C.checksum(text)
        let continued = text[20...].withUnsafeBytes { rest in
            CRC32C.checksum(rest, continuing: CRC32C.checksum(Array(text[..<20])))
        }
        #expect(whole == continued)
    }

    /// A data folder with a log of `count` records over a few channels; returns the folder and
    /// the expected state after each record (index k: after k+1 records).
    private func makeFolder(records count: Int) throws -> (String, [StateRecord]) {
        let path = NSTemporaryDirectory() + "heraldd-persist-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        var records: [StateRecord] = []
        var revs: [String: Int] = [:]
        for k in 0..<count {
            let name = "ch" + String(k % 3)
            let rev = (revs[name] ?? 0) + 1
            revs[name] = rev
            let channel = Array(name.utf8)
            switch rev == 1 ? 0 : 1 + k % 3 {
            case 0: records.append(.set(channel: channel, rev: rev, value: Array("[\(k),\"v\"]".utf8)))
            case 1: records.append(.append(channel: channel, rev: rev, element: Array("{\"k\":\(k)}".utf8)))
            case 2: records.append(.splice(channel: channel, rev: rev, index: 0, remove: 1, insert: [Array("\(k)".utf8)]))
            default: records.append(.assign(channel: channel, rev: rev, index: 0, element: Array("\"\(k)\"".utf8)))
            }
        }
        var bytes: [UInt8] = []
        for record in records { RecordFraming.append(record, to: &bytes) }
        try Data(bytes).write(to: URL(fileURLWithPath: path + "/log.0"))
        return (path, records)
    }

    private func expectedState(_ records: ArraySlice<StateRecord>) -> [[UInt8]: StoredState] {
        let store = StateStore()
        for record in records { store.apply(record) }
        return store.entries
    }

    private func recover(_ path: String, repair: Bool = false) throws(PersistenceError) -> RecoveredState {
        let recovered = try StateDirectory.recover(path: path, repair: repair)
        close(recovered.logDescriptor)
        close(recovered.lockDescriptor)
        return recovered
    }

    private func recordEnds(_ records: [StateRecord]) -> [Int] {
        var ends: [Int] = []
        var bytes: [UInt8] = []
        for record in records {
            RecordFraming.append(record, to: &bytes)
            ends.append(bytes.count)
        }
        return ends
    }

    @Test func aLogTruncatedAtAnyOffsetRecoversEveryWholeRecordBeforeTheCut() throws {
        let (path, records) = try makeFolder(records: 12)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let original = try Data(contentsOf: URL(fileURLWithPath: path + "/log.0"))
        let ends = recordEnds(records)
        for cut in 0...original.count {
            try original.prefix(cut).write(to: URL(fileURLWithPath: path + "/log.0"))
            let recovered = try recover(path)
            let whole = ends.filter { $0 <= cut }.count
            #expect(recovered.entries == expectedState(records[0..<whole]), "cut at \(cut)")
            #expect(recovered.logBytes == (whole == 0 ? 0 : ends[whole - 1]))
            let size = (try? FileManager.default.attributesOfItem(atPath: path + "/log.0")[.size] as? Int) ?? -1
            #expect(size == recovered.logBytes, "the torn tail is cut from the file")
        }
    }

    @Test func aFlippedByteAnywhereIsCutAsATailOrRefusedAsMiddleDamageNeverMisread() throws {
        let (path, records) = try makeFolder(records: 10)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let original = try Data(contentsOf: URL(fileURLWithPath: path + "/log.0"))
        let ends = recordEnds(records)
        for offset in 0..<original.count {
            var damaged = original
            damaged[offset] ^= 0x5A
            try damaged.write(to: URL(fileURLWithPath: path + "/log.0"))
            let hitRecord = ends.firstIndex { offset < $0 } ?? records.count
            do {
                let recovered = try recover(path)
                // Accepted only as a damaged tail: everything before the hit record survives.
                #expect(hitRecord == records.count - 1, "offset \(offset) accepted though records follow")
                #expect(recovered.entries == expectedState(records[0..<hitRecord]))
                #expect(recovered.notes.count == 1)
            } catch {
                #expect(hitRecord < records.count - 1, "offset \(offset): \(error)")
                #expect(error.description.contains("--repair"))
                try damaged.write(to: URL(fileURLWithPath: path + "/log.0"))
                let repaired = try recover(path, repair: true)
                #expect(repaired.entries == expectedState(records[0..<hitRecord]), "repair keeps what precedes the damage")
                try damaged.write(to: URL(fileURLWithPath: path + "/log.0"))
            }
        }
    }

    @Test func aDamagedOrCutSnapshotIsRefusedNamingFileAndOffset() throws {
        let (path, records) = try makeFolder(records: 6)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try startWriter(path, compactMinBytes: 0)
        writer.enqueueSnapshot(expectedState(records[...]))
        writer.stop()
        let snapshot = try Data(contentsOf: URL(fileURLWithPath: path + "/snapshot"))
        #expect(try recover(path).entries == expectedState(records[...]))
        for offset in stride(from: 0, to: snapshot.count, by: 7) {
            var damaged = snapshot
            damaged[offset] ^= 0x01
            try damaged.write(to: URL(fileURLWithPath: path + "/snapshot"))
            #expect(throws: PersistenceError.self, "offset \(offset)") { try recover(path) }
            do {
                _ = try recover(path)
            } catch {
                #expect(error.description.contains(path + "/snapshot: damaged at byte "), "\(error)")
                #expect(error.description.contains("--repair"))
            }
        }
        for cut in stride(from: 0, to: snapshot.count, by: 11) {
            try snapshot.prefix(cut).write(to: URL(fileURLWithPath: path + "/snapshot"))
            #expect(throws: PersistenceError.self, "cut \(cut)") { try recover(path) }
        }
    }

    private func startWriter(_ path: String, compactMinBytes: Int, policy: FsyncPolicy = .always) throws -> StateWriter {
        let recovered = try StateDirectory.recover(path: path, repair: false)
        let writer = StateWriter(directory: path, recovered: recovered, policy: policy, compactMinBytes: compactMinBytes,
                                 logger: Logger(component: "test", level: .error), notify: {})
        writer.start()
        return writer
    }

    @Test func writtenRecordsAndCompactionSurviveARestart() throws {
        let (path, seed) = try makeFolder(records: 0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(seed.isEmpty)
        let store = StateStore()
        var writer = try startWriter(path, compactMinBytes: 64)
        var position = 0
        for round in 0..<5 {
            for k in 0..<20 {
                let channel = Array("c\(k % 4)".utf8)
                let record = StateRecord.append(channel: channel, rev: store.rev(of: channel) + 1,
                                                element: Array("\(round * 100 + k)".utf8))
                store.apply(record)
                position += 1
                writer.enqueue([record], upTo: position)
            }
            // The loop would answer a snapshot request with its store; do it every round.
            writer.enqueueSnapshot(store.snapshot())
            if round == 2 {
                writer.stop()
                #expect(try recover(path).entries == store.entries)
                writer = try startWriter(path, compactMinBytes: 64)
            }
        }
        writer.stop()
        #expect(writer.takeProgress().ackable == position)
        let recovered = try recover(path)
        #expect(recovered.entries == store.entries)
        #expect(recovered.generation >= 2, "compaction ran")
        let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        let previous = "log." + String(recovered.generation - 1)
        #expect(names == ["lock", previous, "log." + String(recovered.generation), "snapshot", "snapshot.previous"],
                "the snapshot before the newest and the logs since it are kept")
    }

    /// Issue 12, section 3: a collected tombstone (`forget`) is gone after a restart, from the
    /// log and from a snapshot, and the rev floor it raised comes back with it.
    @Test func collectedTombstonesStayGoneAndTheFloorSurvivesLogAndSnapshot() throws {
        let (path, _) = try makeFolder(records: 0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = StateStore()
        let a = Array("a".utf8), b = Array("b".utf8)
        let records: [StateRecord] = [
            .set(channel: a, rev: 1, value: Array("1".utf8)), .set(channel: b, rev: 1, value: Array("2".utf8)),
            .delete(channel: a, rev: 2), .forget(channel: a, rev: 2), .delete(channel: b, rev: 2),
        ]
        for record in records { store.apply(record) }
        var writer = try startWriter(path, compactMinBytes: 1 << 20)
        writer.enqueue(records, upTo: records.count)
        writer.stop()
        var recovered = try recover(path)
        #expect(recovered.entries == store.entries && recovered.entries[a] == nil && recovered.entries[b]?.rev == 2)
        #expect(recovered.revFloor == 2)
        writer = try startWriter(path, compactMinBytes: 1 << 20)
        writer.enqueueSnapshot(store.snapshot(), revFloor: store.revFloor)
        writer.stop()
        recovered = try recover(path)
        #expect(recovered.generation == 1)
        #expect(recovered.entries == store.entries && recovered.revFloor == 2, "from the snapshot alone")
    }

    @Test func aSecondDaemonCannotTakeALockedFolder() throws {
        let (path, _) = try makeFolder(records: 1)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = try StateDirectory.recover(path: path, repair: false)
        #expect(throws: PersistenceError.self) { try StateDirectory.recover(path: path, repair: false) }
        close(first.logDescriptor)
        close(first.lockDescriptor)
        _ = try recover(path)
    }
}
