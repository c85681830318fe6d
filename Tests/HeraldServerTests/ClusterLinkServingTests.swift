import Foundation
import HeraldTestSupport
import Testing

/// Links across a real cluster (issue 15, docs/cluster.md "Signals and links"): a link
/// made on any node changes the route of signals sent on every node from its `ok` on;
/// `conflict` and `cycle` hold across nodes, even for two links made at the same moment on
/// different nodes; a link goes with its connection and with its node.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterLinkServingTests {
    private func cluster(_ redis: TestRedis) throws -> [DaemonProcess] { try ClusterTestNodes.three(redis) }
    private func ok(_ client: TestClient, _ line: String, _ op: String) throws { try ClusterTestNodes.ok(client, line, op) }

    /// Sends a signal on `screen.detail` and answers every offer with `stop`.
    /// - Returns: the level that handled it (nil when nobody did).
    private func handledAt(_ sender: TestClient, _ handler: TestClient, rid: Int) throws -> String? {
        sender.send(#"{"op":"signal","ch":"screen.detail","data":1,"timeout_ms":2000,"rid":\#(rid)}"#)
        if let offer = try? handler.frame(timeout: 1), let id = offer["id"] as? String {
            handler.send(#"{"op":"handled","id":"\#(id)","action":"stop"}"#)
        }
        let result = try sender.frame()
        return result["at"] as? String
    }

    @Test func aLinkMadeOnOneNodeRoutesSignalsOnAnotherFromItsOk() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let handler = try nodes[0].client()
        try ok(handler, #"{"op":"sub","ch":"menu","sub":"menu","handle":true}"#, "sub")
        let sender = try nodes[0].client()
        #expect(try handledAt(sender, handler, rid: 1) == nil, "screen.detail bubbles to screen, not menu")
        let linker = try nodes[1].client()
        try ok(linker, #"{"op":"link","ch":"screen","parent":"menu"}"#, "link")
        #expect(try handledAt(sender, handler, rid: 2) == "menu", "the link made on n1 routes a signal sent on n0")
        try ok(linker, #"{"op":"unlink","ch":"screen"}"#, "unlink")
        #expect(try handledAt(sender, handler, rid: 3) == nil, "gone everywhere from the unlink's ok")
    }

    @Test func conflictAndCycleHoldAcrossNodesEvenAtTheSameMoment() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let first = try nodes[0].client()
        let second = try nodes[1].client()
        try ok(first, #"{"op":"link","ch":"a.x","parent":"b"}"#, "link")
        #expect(try second.request(#"{"op":"link","ch":"a.x","parent":"c"}"#)["error"] as? String == "conflict")
        #expect(try second.request(#"{"op":"link","ch":"b","parent":"a.x"}"#)["error"] as? String == "cycle")
        for round in 0..<20 {
            first.send(#"{"op":"link","ch":"p\#(round)","parent":"q\#(round)"}"#)
            second.send(#"{"op":"link","ch":"q\#(round)","parent":"p\#(round)"}"#)
            let answers = [try first.frame(), try second.frame()]
            let codes = answers.map { $0["ok"] as? String ?? $0["error"] as? String ?? "\($0)" }.sorted()
            #expect(codes == ["cycle", "link"], "round \(round): exactly one of two crossing links is refused: \(answers)")
        }
    }

    @Test func aLinkGoesWithItsConnectionAndWithItsNode() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let handler = try nodes[0].client()
        try ok(handler, #"{"op":"sub","ch":"menu","sub":"menu","handle":true}"#, "sub")
        let sender = try nodes[0].client()
        let linker = try nodes[1].client()
        try ok(linker, #"{"op":"link","ch":"screen","parent":"menu"}"#, "link")
        linker.closeNow()
        #expect(try eventually { try handledAt(sender, handler, rid: 1) == nil }, "the link went with its connection")

        let dying = try nodes[2].client()
        try ok(dying, #"{"op":"link","ch":"screen","parent":"menu"}"#, "link")
        #expect(try handledAt(sender, handler, rid: 2) == "menu")
        nodes[2].signal(SIGKILL)
        #expect(try eventually { try handledAt(sender, handler, rid: 3) == nil }, "the link went with its node")
        let other = try nodes[1].client()
        try ok(other, #"{"op":"link","ch":"screen","parent":"elsewhere"}"#, "link")
    }

    /// Tries `condition` every 200 ms for 5 s.
    private func eventually(_ condition: () throws -> Bool) throws -> Bool {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return false
    }
}
