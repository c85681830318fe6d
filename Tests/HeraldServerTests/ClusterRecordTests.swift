import Testing
@testable import HeraldServer

/// The node-to-node forms (docs/cluster.md): event records with their tags and group
/// blocks, and the direct node messages; input from Redis that does not fit is refused,
/// never trusted for lengths.
@Suite struct ClusterRecordTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func aRequestRecordCarriesItsTokenAndTimeout() {
        let token = bytes("0000000300112233445566778899aabb")
        let record = ClusterRecord(seq: 0, from: 7, channel: bytes("a.b"), data: bytes("1"), replyToken: token, timeoutMs: 250)
        let decoded = ClusterRecord.decode(bytes("4 1\n") + record.encoded)
        #expect(decoded == [ClusterRecord(seq: 4, from: 7, channel: bytes("a.b"), data: bytes("1"), replyToken: token, timeoutMs: 250)])
    }

    @Test func theScriptsGroupTagsAndBlockAreRead() {
        let plain = ClusterRecord(seq: 0, from: 1, channel: bytes("q.1"), data: nil).encoded
        let block = ClusterRecord.encodeGroups([bytes("q.* g"), bytes("q.1 my group")])
        let message = bytes("9 1 o g\(block.count)\n") + plain + block + bytes("10 1\n") + plain
        let decoded = ClusterRecord.decode(message)
        #expect(decoded?.count == 2)
        #expect(decoded?.first?.plain == false && decoded?.first?.groups == [bytes("q.* g"), bytes("q.1 my group")])
        #expect(decoded?.last?.plain == true && decoded?.last?.groups == [] && decoded?.last?.seq == 10)
    }

    @Test func aRunsRecordsTakeConsecutiveSeqsEndingAtItsLast() {
        let first = ClusterRecord(seq: 0, from: 3, channel: bytes("r.1"), data: bytes("1")).encoded
        let second = ClusterRecord(seq: 0, from: 3, channel: bytes("r.1"), data: nil).encoded
        let state = bytes("5 3 13 12\nr.1") + bytes(#","kind":"set""#) + bytes(#","value":"x""#)
        let decoded = ClusterRecord.decode(bytes("12 2\n") + first + second + bytes("13 1\n") + state)
        #expect(decoded?.map(\.seq) == [11, 12, 13])
        #expect(decoded?[1].data == nil && decoded?[2].middle == bytes(#","kind":"set""#) && decoded?[2].from == 5)
    }

    @Test func lengthsBeyondTheMessageOrOverflowingAreRefused() {
        for message in ["1 1\n2 3 4\nab", "1 1\n2 99999999999999999 0\nx", "1 1\n2 9223372036854775807 9223372036854775807\nx",
                        "1 1 g9223372036854775807\n2 1 1\nab", "1 1 g5\n2 1 -1\na3:x", "1 1\n2 1 -2\na", "1 1\n2 1\na",
                        "5 3\n1 1 0\na", "1 0\n", "1 1\n2 1 1 9223372036854775807\na"] {
            #expect(ClusterRecord.decode(bytes(message)) == nil, "\(message)")
        }
        #expect(ClusterRecord.groups(bytes("9223372036854775807:x")[...]) == nil)
    }

    @Test func nodeMessagesRoundTripAndMalformedOnesAreRefused() {
        let reply = ClusterNodeMessage.reply(receipt: 3, node: 2, from: 8_589_934_593, token: bytes("00000001abcdefabcdefabcdefabcdef"),
                                             data: bytes(#"{"x":"a b\nc"}"#))
        #expect(ClusterNodeMessage.decode(reply.encoded) == reply)
        let bare = ClusterNodeMessage.reply(receipt: 0, node: 2, from: 1, token: bytes("t"), data: nil)
        #expect(ClusterNodeMessage.decode(bare.encoded) == bare)
        let answered = ClusterNodeMessage.replyAnswered(receipt: 12, delivered: true)
        #expect(ClusterNodeMessage.decode(answered.encoded) == answered)
        let unheard = ClusterNodeMessage.unheard(token: bytes("00000001abcdefabcdefabcdefabcdef"))
        #expect(ClusterNodeMessage.decode(unheard.encoded) == unheard)
        #expect(ClusterNodeMessage.decode(bytes("Zshort")) == nil)
        #expect(ClusterNodeMessage.isNodeMessage(answered.encoded) && !ClusterNodeMessage.isNodeMessage(bytes("1 2 3 4\n")))
        for message in ["R1 2 3 t 50\nshort", "R1 2 3 t 9223372036854775807\nx", "R1 2 3\n", "D", "X1 1", ""] {
            #expect(ClusterNodeMessage.decode(bytes(message)) == nil, "\(message)")
        }
    }

    @Test func lockListQueriesAndAnswersRoundTripAndMalformedOnesAreRefused() {
        let query = ClusterNodeMessage.locksQuery(id: 7, node: 2, kind: UInt8(ascii: "l"), user: bytes("ann 1\n"), channel: bytes("dock.1"))
        #expect(ClusterNodeMessage.decode(query.encoded) == query)
        let anonymous = ClusterNodeMessage.locksQuery(id: 8, node: 2, kind: UInt8(ascii: "o"), user: [], channel: bytes("d.>"))
        #expect(ClusterNodeMessage.decode(anonymous.encoded) == anonymous)
        let answer = ClusterNodeMessage.locksAnswer(id: 7, node: 3, truncated: true, locked: [bytes("c1/a b:c")],
                                                    unlocked: [bytes("c2/x"), []])
        #expect(ClusterNodeMessage.decode(answer.encoded) == answer)
        let empty = ClusterNodeMessage.locksAnswer(id: 9, node: 3, truncated: false, locked: [], unlocked: [])
        #expect(ClusterNodeMessage.decode(empty.encoded) == empty)
        for message in ["Q7 2 l 9\nshort", "Q7 2 l 0\n", "Q7 2\nx", "Q7 2 x 0\nab", "A7 3 0 1 0\n", "A7 3 0 1 0\n5:ab",
                        "A7 3 0 0 0\n1:a", "A7 3 0 -1 1\n1:a", "A7 3 0 1 0\n9999999:a", "Q7 2 l -1\nab", "A7 3 2 0 0\n"] {
            #expect(ClusterNodeMessage.decode(bytes(message)) == nil, "\(message)")
        }
    }
}
