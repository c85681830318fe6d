import Foundation
import HeraldBroker
import Testing

/// A plain delivery goes to the subscriber's queue as one append of its prefix and the
/// event's shared parts, the prefix copied into the scratch buffer's headroom
/// (`FrameScratch.prefixed`); a prefix longer than the headroom takes two appends. Both must
/// write the same frames, in any mix, and leave the shared parts intact for the next
/// subscriber.
@Suite struct FramePrefixTests {
    @Test func longAndShortPrefixesInOneFanOutWriteWholeFrames() throws {
        let harness = BrokerHarness(BrokerConfig())
        let channel = "c." + String(repeating: "x", count: 240)
        // 255 control bytes: escaped as \u0001 each, a prefix of about 1,800 bytes.
        let longName = String(repeating: "\u{1}", count: 255)
        let escapedLong = String(repeating: "\\u0001", count: 255)
        let short = harness.connect()
        let long = harness.connect()
        let withArgs = harness.connect()
        #expect(harness.subscribe(short, #""ch":"\#(channel)","sub":"a""#)["ok"] as? String == "sub")
        #expect(harness.subscribe(long, #""ch":"\#(channel)","sub":"\#(escapedLong)""#)["ok"] as? String == "sub")
        #expect(harness.subscribe(withArgs, #""ch":"\#(channel)","sub":"b","args":{"k":1}"#)["ok"] as? String == "sub")
        let publisher = harness.connect()
        for round in 1...3 {
            harness.send(publisher, #"{"op":"pub","ch":"\#(channel)","data":{"n":\#(round)},"rid":\#(round)}"#)
            #expect(harness.frames(publisher).first?["receivers"] as? Int == 3)
        }
        for (session, name) in [(short, "a"), (long, longName), (withArgs, "b")] {
            let frames = harness.frames(session)
            #expect(frames.count == 3, "\(name.count)-byte name: \(frames)")
            for (offset, frame) in frames.enumerated() {
                #expect(frame["event"] as? String == channel && frame["sub"] as? String == name
                        && frame["seq"] as? Int == offset + 1 && (frame["data"] as? [String: Any])?["n"] as? Int == offset + 1,
                        "\(frame)")
                if name == "b" { #expect((frame["args"] as? [String: Any])?["k"] as? Int == 1, "\(frame)") }
            }
        }
    }
}
