import Foundation
import HeraldFuzzHarness
import HeraldWire
import Testing

/// Replays the fuzzer's seeds and every crash it found through the same harness the fuzzer
/// runs (`Sources/HeraldFuzzHarness`), so a fixed finding stays fixed in the normal test run.
@Suite struct FuzzRegressionTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let regressions = repository.appendingPathComponent("Tests/HeraldBrokerTests/FuzzRegressions")
    static let seeds = repository.appendingPathComponent("FuzzTesting/corpus/seed")

    static func inputs(in directory: URL) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.sorted().map { directory.appendingPathComponent($0) }
    }

    static func replay(_ file: URL) throws -> (violations: [String], frames: [(Int, [UInt8])]) {
        let data = try Data(contentsOf: file)
        return data.withUnsafeBytes { FuzzHarness.runRecording($0) }
    }

    @Test func everyCrashTheFuzzerFoundNowRunsClean() throws {
        let files = Self.inputs(in: Self.regressions)
        #expect(!files.isEmpty, "no regression inputs in \(Self.regressions.path)")
        for file in files {
            let violations = try Self.replay(file).violations
            #expect(violations.isEmpty, "\(file.lastPathComponent): \(violations)")
        }
    }

    @Test func everySeedRunsCleanAndEveryOpIsAnswered() throws {
        let files = Self.inputs(in: Self.seeds)
        #expect(files.count >= 10, "seed corpus missing: run scripts/fuzz_seeds.py")
        var answered = Set<String>()
        for file in files {
            let (violations, frames) = try Self.replay(file)
            #expect(violations.isEmpty, "\(file.lastPathComponent): \(violations)")
            for (_, frame) in frames {
                let text = String(decoding: frame, as: UTF8.self)
                if text.hasPrefix(#"{"ok":""#), let end = text.dropFirst(7).firstIndex(of: "\"") {
                    answered.insert(String(text[text.index(text.startIndex, offsetBy: 7)..<end]))
                }
                if text.hasPrefix(#"{"callback":"#) { answered.insert("callback-delivered") }
                if text.hasPrefix(#"{"pong":"#) { answered.insert("ping") }
            }
        }
        // The seeds must reach every op's success path, or the fuzzer starts far from them.
        for op in Op.allCases.map(\.rawValue) where !answered.contains(op) {
            Issue.record("no seed gets an ok answer to \(op)")
        }
        #expect(answered.contains("callback-delivered"))
    }

    @Test func splitFeedsAndInvariantsHoldOnGarbage() {
        // A cheap stand-in for the fuzzer in the normal run: random bytes with frame-like
        // pieces, from a fixed seed, must never violate an invariant.
        var state: UInt64 = 0x5EED
        let pieces: [[UInt8]] = [Array(#"{"op":"sub","ch":"a.*"}"#.utf8), Array(#"{"op":"pub","ch":"a.b","data":1}"#.utf8),
                                 Array(#"{"op":"req","ch":"a.b","timeout_ms":5}"#.utf8), [0x0A], [0x0A, 0x01, 0x01],
                                 [0x0A, 0x02, 0xFF, 0x00], [0x0A, 0x03], [0x0A, 0x04], [0x0A, 0x07], Array("\",:{}[]".utf8)]
        for _ in 0..<200 {
            var input: [UInt8] = []
            for _ in 0..<40 {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let pick = Int(state >> 33)
                if pick % 5 == 0 { input.append(UInt8(truncatingIfNeeded: pick >> 8)) } else { input += pieces[pick % pieces.count] }
            }
            let violations = input.withUnsafeBytes { FuzzHarness.run($0) }
            #expect(violations.isEmpty, "\(violations)")
        }
    }
}
