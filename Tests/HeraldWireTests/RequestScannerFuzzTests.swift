import Testing
@testable import HeraldWire

/// Generated inputs: mutated valid frames must never crash, must only ever fail with
/// `bad_json`, and must be accepted exactly when an independent reference validator accepts.
@Suite struct RequestScannerFuzzTests {
    static let seeds: [String] = [
        #"{"op":"pub","ch":"orders.eu","data":{"id":7,"items":[1,2.5,-3e2],"ok":true},"rid":12}"#,
        #"{"op":"sub","ch":"a.*","echo":false,"max":100,"group":"g1","timeout_ms":250}"#,
        #"{"op":"set","ch":"k","value":"h\u00e9llo \ud83c\udf89 \"q\" \\","if_rev":3,"data":null}"#,
        #" { "op" : "req" , "to" : "svc" , "data" : [ { } , [ ] , "" , 0 , -0.0 ] } "#,
        "{\"op\":\"pub\",\"ch\":\"日本\",\"data\":\"😀 ✓ é\",\"tag\":[\"x\",{\"y\":null}]}",
    ]

    /// Applies one random edit: flip, replace, insert, delete, truncate or duplicate a span.
    static func mutate(_ input: [UInt8], _ random: inout ScannerTestRandom) -> [UInt8] {
        var bytes = input
        let interesting: [UInt8] = Array(#"{}[]":,\ .-+eE0159tfnu"#.utf8) + [0x00, 0x0A, 0x80, 0xC3, 0xED, 0xF4, 0xFF]
        let edits = Int(random.next() % 3) + 1
        for _ in 0..<edits where !bytes.isEmpty {
            let at = Int(random.next() % UInt64(bytes.count))
            let pick = interesting[Int(random.next() % UInt64(interesting.count))]
            switch random.next() % 6 {
            case 0: bytes[at] ^= UInt8(1 << (random.next() % 8))
            case 1: bytes[at] = pick
            case 2: bytes.insert(pick, at: at)
            case 3: bytes.remove(at: at)
            case 4: bytes.removeLast(bytes.count - at)
            default:
                let end = min(bytes.count, at + Int(random.next() % 8) + 1)
                bytes.insert(contentsOf: bytes[at..<end], at: at)
            }
        }
        return bytes
    }

    /// Reads every field through every accessor; they may throw only `bad_field`.
    static func exerciseAccessors(_ scanner: RequestScanner) -> Bool {
        var ok = true
        for field in RequestField.allCases {
            _ = scanner.raw(field)
            _ = scanner.isPresent(field)
            do throws(HeraldError) { _ = try scanner.string(field) } catch { ok = ok && error.code == .badField }
            do throws(HeraldError) { _ = try scanner.int(field) } catch { ok = ok && error.code == .badField }
            do throws(HeraldError) { _ = try scanner.bool(field) } catch { ok = ok && error.code == .badField }
        }
        return ok
    }

    @Test func seedFramesAreValid() {
        for seed in Self.seeds {
            #expect(ScanFixture.error(seed) == nil, "\(seed)")
            #expect(ScannerReferenceValidator.accepts(Array(seed.utf8)), "\(seed)")
        }
    }

    @Test func mutatedFramesScanOrFailWithBadJSONAndAgreeWithReference() {
        var random = ScannerTestRandom(seed: 0xC0FFEE)
        let scanner = RequestScanner()
        var accepted = 0
        for round in 0..<3_000 {
            let line = Self.mutate(Array(Self.seeds[round % Self.seeds.count].utf8), &random)
            let outcome = line.withUnsafeBytes { buffer -> (error: HeraldError?, accessorsOK: Bool) in
                do throws(HeraldError) {
                    try scanner.scan(buffer)
                    return (nil, Self.exerciseAccessors(scanner))
                } catch {
                    return (error, true)
                }
            }
            let text = String(decoding: line, as: UTF8.self)
            #expect(outcome.accessorsOK, "\(text)")
            if let error = outcome.error {
                #expect(error.code == .badJSON, "\(text)")
                if error.message.hasPrefix("duplicate key") { continue }
            } else {
                accepted += 1
            }
            #expect((outcome.error == nil) == ScannerReferenceValidator.accepts(line), "\(text): \(String(describing: outcome.error))")
        }
        // The mix should exercise both outcomes, or the test proves little.
        #expect(accepted > 100 && accepted < 2_900)
    }

    @Test func randomJSONAlphabetSoupNeverCrashes() {
        var random = ScannerTestRandom(seed: 42)
        let alphabet = Array(#"{}[]":, "abtrufalsenull0123456789-+.eE\u"#.utf8)
        for _ in 0..<2_000 {
            let length = Int(random.next() % 40)
            var line = Array(#"{"#.utf8)
            for _ in 0..<length { line.append(alphabet[Int(random.next() % UInt64(alphabet.count))]) }
            let error = ScanFixture.error(line)
            #expect(error == nil || error?.code == .badJSON)
            if error?.message.hasPrefix("duplicate key") != true {
                #expect((error == nil) == ScannerReferenceValidator.accepts(line), "\(String(decoding: line, as: UTF8.self))")
            }
        }
    }
}
