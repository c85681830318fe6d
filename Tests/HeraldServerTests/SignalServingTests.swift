import Foundation
import Testing

/// Signals through the real daemon (issue 5), over TCP as `nc` would send them.
@Suite struct SignalServingTests {
    @Test func signalBubblesUpWithCallbacksAndTimeouts() throws {
        let daemon = try DaemonProcess(arguments: ["--workers", "2"])
        let sender = try daemon.client()
        let silent = try daemon.client()
        let screen = try daemon.client()
        _ = try silent.request(#"{"op":"sub","ch":"app.settings.profile","sub":"mute","handle":true}"#)
        _ = try screen.request(#"{"op":"sub","ch":"app.*","sub":"screen","handle":true}"#)
        sender.send(#"{"op":"signal","ch":"app.settings.profile","data":"save","timeout_ms":100,"rid":9}"#)
        #expect(try silent.frame()["signal"] as? String == "app.settings.profile")
        let offer = try screen.frame(timeout: 5)
        #expect(offer["signal"] as? String == "app.settings")
        let id = offer["id"] as? String ?? ""
        screen.send(#"{"op":"callback","id":"\#(id)","data":{"progress":50}}"#)
        screen.send(#"{"op":"handled","id":"\#(id)","action":"stop"}"#)
        let callback = try sender.frame()
        #expect(callback["callback"] as? String == id)
        #expect((callback["data"] as? [String: Int])?["progress"] == 50)
        let result = try sender.frame()
        #expect(result["ok"] as? String == "signal")
        #expect(result["rid"] as? Int == 9)
        #expect(result["at"] as? String == "app.settings")
        #expect((result["handled_by"] as? String)?.hasSuffix("/screen") == true)
        #expect((result["timeouts"] as? [String])?.first?.hasSuffix("/mute") == true)
        #expect(result["hops"] as? Int == 2)
        let stats = try sender.request(#"{"op":"stats"}"#)
        #expect(stats["signals"] as? Int == 0)
        #expect(stats["timers"] as? Int == 0)
    }
}
