import HeraldBroker
import HeraldWire

/// One fuzz input run through the line framer and the broker, with the invariants checked.
///
/// Why a library of its own: the libFuzzer executable (`Fuzz/`, built with
/// `-sanitize=fuzzer,address`) and the regression tests of the normal debug build replay
/// inputs through exactly this code, so a crash the fuzzer found stays a failing test until
/// it is fixed. It has no libFuzzer symbols and no sanitizer requirements.
///
/// Input layout (see docs/architecture.md, "Fuzzing"): byte 0 picks config variants, bytes
/// 1–2 pick where the stream is split in two feeds, the rest is the byte stream a client
/// would send. A line whose first byte is 0x01…0x08 or 0x0B is a harness directive (switch
/// session, advance time, hang up, stop/start reading, make journal records durable, shut
/// down, reply to the last request token, reload the auth settings, hold token
/// verifications) rather than a request; any other line goes to `Broker.handleLine`.
public enum FuzzHarness {
    /// Runs one input and returns the invariants it violated (empty when all held).
    ///
    /// - Parameter data: the fuzz input, any bytes.
    /// - Returns: one message per violated invariant; the fuzzer entry traps on any.
    public static func run(_ data: UnsafeRawBufferPointer) -> [String] {
        run(data, recording: false).violations
    }

    /// Runs one input and also returns every frame the clients were handed, so tests can
    /// check that a seed reaches what it was written for.
    ///
    /// - Parameter data: the input.
    /// - Returns: the violated invariants and the frames as `(connection id, frame)`.
    public static func runRecording(_ data: UnsafeRawBufferPointer) -> (violations: [String], frames: [(Int, [UInt8])]) {
        let result = run(data, recording: true)
        return (result.violations, result.frames ?? [])
    }

    private static func run(_ data: UnsafeRawBufferPointer, recording: Bool) -> (violations: [String], frames: [(Int, [UInt8])]?) {
        guard data.count >= 3 else { return ([], nil) }
        let flags = data[0]
        let splitSeed = Int(data[1]) | Int(data[2]) << 8
        let stream = UnsafeRawBufferPointer(rebasing: data[3...])
        let split = stream.isEmpty ? 0 : splitSeed % (stream.count + 1)
        let maxLine = FuzzSession.config(flags: flags).maxLine

        // The framer must report the same lines whether the stream comes in one read or two.
        let whole = framedEvents(stream, maxLine: maxLine)
        var session = FuzzSession(flags: flags)
        if recording { session.recorded = [] }
        var splitEvents: [FramedEvent] = []
        var framer = LineFramer(maxLine: maxLine)
        for part in [UnsafeRawBufferPointer(rebasing: stream[..<split]),
                     UnsafeRawBufferPointer(rebasing: stream[split...])] {
            framer.feed(part) { framed in
                splitEvents.append(FramedEvent(framed))
                session.handle(framed)
            }
            if framer.carriedCount > maxLine {
                session.violations.append("framer: carries \(framer.carriedCount) bytes, past max_line \(maxLine)")
            }
        }
        if whole != splitEvents {
            session.violations.append("framer: one feed gave \(whole.count) lines, split at \(split) gave \(splitEvents.count) or different bytes")
        }
        session.finish()
        return (session.violations, session.recorded)
    }

    /// The framer's output for `stream` fed in one piece.
    static func framedEvents(_ stream: UnsafeRawBufferPointer, maxLine: Int) -> [FramedEvent] {
        var events: [FramedEvent] = []
        var framer = LineFramer(maxLine: maxLine)
        framer.feed(stream) { events.append(FramedEvent($0)) }
        return events
    }
}

/// A framer result kept past its callback, for comparing two feeds.
///
/// Only the fact of an overlong line is compared, not its reported length: the framer
/// reports the length seen so far, which legitimately depends on how the bytes arrived.
struct FramedEvent: Equatable {
    /// The line's bytes, or nil for an overlong line.
    let line: [UInt8]?

    init(_ framed: FramedLine) {
        switch framed {
        case .line(let bytes): line = Array(bytes)
        case .tooLong: line = nil
        }
    }
}
