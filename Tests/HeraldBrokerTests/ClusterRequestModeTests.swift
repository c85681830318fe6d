import Foundation
import Testing
@testable import HeraldBroker

/// `req`/`reply` on the broker's side of cluster mode (docs/cluster.md, "Requests and
/// replies"), the test playing the engine and the other nodes.
@Suite struct ClusterRequestModeTests {
    private func clustered(_ config: BrokerConfig = BrokerConfig(epoch: "e1")) -> (BrokerHarness, ClusterState) {
        BrokerHarness.clustered(node: 5, config)
    }

    private func requests(_ cluster: ClusterState) -> [ClusterState.Event] {
        cluster.takeOutbox().filter { $0.replyToken != nil }
    }

    @Test func aRequestWaitsHereAndGoesToRedisWithATokenNamingThisNode() {
        let (harness, cluster) = clustered()
        let requester = harness.connect()
        harness.send(requester, #"{"op":"req","ch":"math.double","data":21,"rid":"q"}"#)
        #expect(harness.frames(requester).isEmpty)
        let sent = requests(cluster)
        #expect(sent.count == 1 && sent.first?.keepsHistory == false && sent.first?.from == requester.id)
        let token = sent.first?.replyToken ?? []
        #expect(token.count == 32 && String(decoding: token.prefix(8), as: UTF8.self) == "00000005")
        #expect(harness.broker.remoteReply(token: token, from: (7 << 32) | 3, data: Array("42".utf8)))
        let answer = harness.frames(requester).first
        #expect(answer?["ok"] as? String == "req" && answer?["rid"] as? String == "q" && answer?["data"] as? Int == 42)
        #expect(answer?["from"] as? String == "c\((7 << 32) | 3)")
        #expect(!harness.broker.remoteReply(token: token, from: 1, data: nil), "only the first reply")
        #expect(harness.broker.audit().timers == 0 && harness.broker.audit().requests == 0)
    }

    @Test func aRequestNoNodeCanReceiveIsNoRespondersAndOneRedisCouldNotTakeIsUnavailable() {
        let (harness, cluster) = clustered()
        let requester = harness.connect()
        harness.send(requester, #"{"op":"req","ch":"none","rid":1}"#)
        harness.broker.clusterRequestUnsent(token: requests(cluster).first?.replyToken ?? [], unavailable: nil)
        let none = harness.frames(requester).first
        #expect(none?["error"] as? String == "no_responders" && none?["op"] as? String == "req" && none?["rid"] as? Int == 1)
        harness.send(requester, #"{"op":"req","ch":"none","rid":2}"#)
        harness.broker.clusterRequestUnsent(token: requests(cluster).first?.replyToken ?? [], unavailable: "connection to Redis lost")
        #expect(harness.frames(requester).first?["error"] as? String == "unavailable")
        #expect(harness.broker.audit().timers == 0)
    }

    @Test func aRequestEveryReachedNodeDeliveredToNobodyIsNoRespondersWhateverTheOrderOfReports() {
        let (harness, cluster) = clustered()
        let requester = harness.connect()
        harness.send(requester, #"{"op":"req","ch":"q","rid":1}"#)
        let token = requests(cluster).first?.replyToken ?? []
        harness.broker.clusterRequestUnheard(token: token)
        #expect(harness.frames(requester).isEmpty, "how many nodes it went to is not known yet")
        harness.broker.clusterRequestRouted(token: token, nodes: 2)
        #expect(harness.frames(requester).isEmpty, "one of two nodes reported")
        harness.broker.clusterRequestUnheard(token: token)
        #expect(harness.frames(requester).first?["error"] as? String == "no_responders")
        #expect(harness.broker.audit().timers == 0 && harness.broker.audit().requests == 0)
        harness.send(requester, #"{"op":"req","ch":"q","rid":2}"#)
        let answered = requests(cluster).first?.replyToken ?? []
        harness.broker.clusterRequestRouted(token: answered, nodes: 2)
        harness.broker.clusterRequestUnheard(token: answered)
        #expect(harness.broker.remoteReply(token: answered, from: 3, data: nil), "the other node's responder answered")
        harness.broker.clusterRequestUnheard(token: answered)
        #expect(harness.frames(requester).count == 1, "one answer, no late no_responders")
    }

    @Test func aReplyToAnotherNodesRequestGoesThereAndItsAnswerComesBack() {
        let (harness, cluster) = clustered()
        let responder = harness.connect()
        let token = Array("0000000912345678abcdef0123456789".utf8)
        harness.send(responder, #"{"op":"reply","to":"\#(String(decoding: token, as: UTF8.self))","data":1,"rid":"r"}"#)
        #expect(harness.frames(responder).isEmpty, "the answer comes from node 9")
        let sent = cluster.takeOutbox().filter { $0.directNode != nil }
        #expect(sent.count == 1 && sent.first?.directNode == 9 && sent.first?.replyToken == token)
        #expect(sent.first?.data == Array("1".utf8) && sent.first?.from == responder.id)
        harness.broker.remoteReplyAnswered(receipt: sent.first?.receipt ?? 0, delivered: true)
        let answer = harness.frames(responder).first
        #expect(answer?["ok"] as? String == "reply" && answer?["delivered"] as? Bool == true && answer?["rid"] as? String == "r")
    }

    @Test func withAuthOnlyAConnectionTheRequestWasDeliveredToHereMayReplyIssue12() {
        let config = authConfig([user("app", token: "t"), user("ro", token: "r", publish: rule(allow: ["other.>"]))])
        let (harness, cluster) = clustered(config)
        let responder = harness.connect(token: "t")
        let readOnly = harness.connect(token: "r")
        let stranger = harness.connect(token: "t")
        harness.subscribe(responder, #""ch":"svc.q""#)
        harness.subscribe(readOnly, #""ch":"svc.q""#)
        _ = cluster.takeInterest().map { harness.broker.interestSeen(upTo: $0.ticket) }
        _ = harness.frames(responder)
        _ = harness.frames(readOnly)
        let token = Array("00000009aaaaaaaabbbbbbbbcccccccc".utf8)
        let routing = ClusterRouting(replyToken: token, requestTimeoutMs: 500)
        #expect(harness.broker.deliverRemote(RemoteEvent(seq: 1, from: 9 << 32, channel: Array("svc.q".utf8), data: nil), routing: routing, now: 0) == 2)
        #expect(harness.frames(responder).first?["reply"] as? String == String(decoding: token, as: UTF8.self))
        #expect(harness.frames(readOnly).count == 1)
        let hex = String(decoding: token, as: UTF8.self)
        #expect(harness.request(stranger, #"{"op":"reply","to":"\#(hex)","rid":1}"#)["error"] as? String == "forbidden")
        #expect(harness.request(readOnly, #"{"op":"reply","to":"\#(hex)","rid":2}"#)["error"] as? String == "forbidden",
                "delivered, but its user may not publish on the request's channel")
        #expect(cluster.takeOutbox().filter { $0.directNode != nil }.isEmpty, "nothing refused is sent on")
        harness.send(responder, #"{"op":"reply","to":"\#(hex)"}"#)
        #expect(cluster.takeOutbox().filter { $0.directNode == 9 }.count == 1)
        #expect(harness.broker.audit().timers == 1, "who may reply is kept until the timeout and a margin")
        harness.broker.fireDeadlines(now: 500 + Broker.deliveredRequestMarginMs)
        #expect(harness.broker.audit().timers == 0)
        #expect(harness.request(responder, #"{"op":"reply","to":"\#(hex)","rid":3}"#)["error"] as? String == "forbidden",
                "after that this node can no longer tell")
    }
}
