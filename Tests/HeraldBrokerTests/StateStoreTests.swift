import Testing
import HeraldBroker
import HeraldWire

/// The store behind retained state: records, limits, idempotent replay (issue 6).
@Suite struct StateStoreTests {
    private let ch = Array("c".utf8)

    @Test func everyRecordKindSurvivesEncodeAndDecode() {
        let records: [StateRecord] = [
            .set(channel: ch, rev: 1, value: Array(#"{"a":1}"#.utf8)),
            .delete(channel: ch, rev: 2),
            .append(channel: ch, rev: 3, element: Array("7".utf8)),
            .assign(channel: ch, rev: 4, index: 0, element: Array("8".utf8)),
            .splice(channel: ch, rev: 5, index: 0, remove: 1, insert: [Array("1".utf8), Array("[2]".utf8)]),
            .splice(channel: ch, rev: 1 << 40, index: 3, remove: 0, insert: []),
            .forget(channel: ch, rev: 6),
            .forget(channel: [], rev: 9),
        ]
        for record in records {
            var bytes: [UInt8] = []
            record.encode(into: &bytes)
            #expect(bytes.withUnsafeBytes { StateRecord.decode($0) } == record)
            // Every strict prefix is refused, never misread.
            for cut in 0..<bytes.count {
                #expect(bytes[0..<cut].withUnsafeBytes { StateRecord.decode($0) } == nil)
            }
        }
    }

    /// Issue 12, section 3: collecting a tombstone removes it and raises the rev floor,
    /// and replaying what came before the collection cannot bring the channel back lower.
    @Test func forgettingATombstoneRaisesTheFloorAndStaleRecordsStaySkipped() {
        let store = StateStore()
        store.apply(.set(channel: ch, rev: 1, value: Array("12".utf8)))
        #expect(store.apply(.forget(channel: ch, rev: 1)) == .invalid, "a channel holding content is never forgotten")
        store.apply(.delete(channel: ch, rev: 2))
        #expect(store.retainedBytes == 1, "a tombstone costs its name")
        #expect(store.apply(.forget(channel: ch, rev: 2)) == .applied)
        #expect(store.state(of: ch) == nil && store.retainedBytes == 0 && store.revFloor == 2)
        #expect(store.rev(of: ch) == 0, "if_rev:0 matches a channel without an entry")
        #expect(store.nextRev(of: ch) == 3 && store.nextRev(of: Array("other".utf8)) == 3)
        #expect(store.apply(.set(channel: ch, rev: 1, value: Array("12".utf8))) == .skipped, "replayed from before the floor")
        #expect(store.apply(.set(channel: ch, rev: 3, value: Array("5".utf8))) == .applied)
        #expect(store.apply(.forget(channel: ch, rev: 2)) == .skipped, "set again since")
        #expect(store.state(of: ch)?.rev == 3)
        #expect(store.apply(.forget(channel: [], rev: 7)) == .applied && store.revFloor == 7, "a snapshot's floor")
        #expect(store.apply(.forget(channel: [], rev: 4)) == .applied && store.revFloor == 7, "the floor never falls")
    }

    @Test func applyingARecordTwiceChangesNothingTheSecondTime() {
        let store = StateStore()
        let record = StateRecord.append(channel: ch, rev: 1, element: Array("1".utf8))
        #expect(store.apply(record) == .applied)
        #expect(store.apply(record) == .skipped)
        #expect(store.state(of: ch)?.list?.count == 1)
    }

    @Test func retainedBytesFollowEveryChange() {
        let store = StateStore()
        store.apply(.set(channel: ch, rev: 1, value: Array("[1,22]".utf8)))
        #expect(store.retainedBytes == 1 + 6)
        store.apply(.append(channel: ch, rev: 2, element: Array("333".utf8)))
        #expect(store.retainedBytes == 1 + 10)
        store.apply(.splice(channel: ch, rev: 3, index: 0, remove: 3, insert: []))
        #expect(store.retainedBytes == 1 + 2)
        store.apply(.delete(channel: ch, rev: 4))
        #expect(store.retainedBytes == 1)
    }

    @Test func limitsRefuseWithoutApplyingAnything() {
        let store = StateStore()
        let limits = StateLimits(maxValueBytes: 10, maxListLength: 2, maxRetainedBytes: 20)
        #expect(store.apply(.set(channel: ch, rev: 1, value: Array("12345678901".utf8)), limits: limits).isRefused)
        #expect(store.apply(.set(channel: ch, rev: 1, value: Array("[1,2,3]".utf8)), limits: limits).isRefused)
        #expect(store.apply(.set(channel: ch, rev: 1, value: Array("[1,2]".utf8)), limits: limits) == .applied)
        #expect(store.apply(.append(channel: ch, rev: 2, element: Array("3".utf8)), limits: limits).isRefused)
        store.apply(.set(channel: Array("d".utf8), rev: 1, value: Array("123456789".utf8)), limits: limits)
        #expect(store.apply(.set(channel: Array("e".utf8), rev: 1, value: Array("12345".utf8)), limits: limits).isRefused, "6 + 10 + 6 > 20")
        #expect(store.state(of: ch)?.list?.count == 2)
        #expect(store.state(of: Array("e".utf8)) == nil)
    }

    @Test func recordsThatDoNotFitTheStateAreInvalid() {
        let store = StateStore()
        store.apply(.set(channel: ch, rev: 1, value: Array("5".utf8)))
        #expect(store.apply(.append(channel: ch, rev: 2, element: Array("1".utf8))) == .invalid)
        #expect(store.apply(.assign(channel: Array("x".utf8), rev: 1, index: 0, element: Array("1".utf8))) == .invalid)
        #expect(store.apply(.set(channel: ch, rev: 2, value: Array("[1,".utf8))) == .invalid)
    }
}

extension ApplyOutcome {
    var isRefused: Bool {
        if case .refused(let error) = self { return error.code == .limit }
        return false
    }
}
