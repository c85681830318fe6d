@testable import Herald
import Testing

/// `IncomingEvent` reads an `event` frame in one pass (`EventFields`): every field must come
/// out as the per-key lookups gave it.
@Suite struct IncomingEventTests {
    private func event(_ line: String) -> IncomingEvent? {
        ServerFrame(Array(line.utf8)).flatMap(IncomingEvent.init(frame:))
    }

    @Test func readsEveryField() throws {
        let line = #"{"event":"a.b","sub":"s1","seq":7,"from":"c2","args":{"x":1},"last":true,"dropped":3,"replay":true,"kind":"splice","rev":9,"reply":"r1","index":2,"remove":1,"insert":[4,5],"data":{"k":"v"}}"#
        let incoming = try #require(event(line))
        let metadata = incoming.metadata
        #expect(metadata.channel.name == "a.b")
        #expect(metadata.subscription == "s1")
        #expect(metadata.seq == 7)
        #expect(metadata.sender == "c2")
        #expect(metadata.args?.description == #"{"x":1}"#)
        #expect(metadata.isLast)
        #expect(metadata.dropped == 3)
        #expect(metadata.isReplay)
        #expect(metadata.kind == "splice")
        #expect(metadata.rev == 9)
        #expect(metadata.replyToken == "r1")
        #expect(metadata.index == 2)
        #expect(metadata.remove == 1)
        #expect(metadata.insert?.description == "[4,5]")
        #expect(incoming.data?.description == #"{"k":"v"}"#)
    }

    @Test func absentWrongAndRepeatedFields() throws {
        let plain = try #require(event(#"{"event":"a","sub":"s1","data":1}"#))
        #expect(plain.metadata.sender == nil && plain.metadata.seq == nil && plain.metadata.args == nil)
        #expect(!plain.metadata.isLast && plain.metadata.dropped == 0 && !plain.metadata.isReplay)
        #expect(plain.metadata.kind == nil && plain.metadata.rev == nil && plain.metadata.replyToken == nil)
        // List fields only for list kinds.
        let set = try #require(event(#"{"event":"a","sub":"s1","kind":"set","index":1,"value":[1]}"#))
        #expect(set.metadata.index == nil)
        // State events carry `value`; `data` wins when both are there.
        #expect(set.data?.description == "[1]")
        #expect(event(#"{"event":"a","sub":"s1","value":1,"data":2}"#)?.data?.description == "2")
        // Wrong types read as absent; the first of a repeated key wins.
        let odd = try #require(event(#"{"event":"a","sub":"s1","seq":"7","last":1,"from":5,"seq":8}"#))
        #expect(odd.metadata.seq == nil && !odd.metadata.isLast && odd.metadata.sender == nil)
        // An escaped key is not the key (the frame reader compares plain bytes only).
        #expect(event(#"{"event":"a","sub":"s1","se\u0071":3}"#)?.metadata.seq == nil)
        // Without `event` or `sub` there is no event.
        #expect(event(#"{"event":"a","data":1}"#) == nil)
        #expect(event(#"{"sub":"s1","data":1}"#) == nil)
        #expect(event(#"{"event":7,"sub":"s1"}"#) == nil)
    }
}

/// `EventFields` compares packed keys written as literals: they must be `FieldKey`'s packing.
@Suite struct EventFieldsTests {
    @Test func literalKeysArePacked() {
        #expect(EventFields.Keys.all.count == 16)
        for (packed, name) in EventFields.Keys.all {
            #expect(FieldKey.packed(Array(name.utf8)) == packed, "\(name)")
        }
    }
}
