@testable import HeraldWire

/// Helpers for scanner tests: scanning keeps the line's memory alive only inside `body`,
/// so every assertion that reads the line runs inside these closures.
enum ScanFixture {
    /// The UTF-8 bytes of `text`.
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Scans `bytes` and runs `body` while they are still alive.
    static func scan<R>(_ bytes: [UInt8], maxDepth: Int = 64, _ body: (RequestScanner) throws -> R) throws -> R {
        let scanner = RequestScanner(maxDepth: maxDepth)
        return try bytes.withUnsafeBytes { line in
            try scanner.scan(line)
            return try body(scanner)
        }
    }

    /// Scans `text` and runs `body` while its bytes are still alive.
    static func scan<R>(_ text: String, _ body: (RequestScanner) throws -> R) throws -> R {
        try scan(bytes(text), body)
    }

    /// The error scanning `bytes` throws, or nil when the line is accepted.
    static func error(_ bytes: [UInt8], maxDepth: Int = 64) -> HeraldError? {
        let scanner = RequestScanner(maxDepth: maxDepth)
        return bytes.withUnsafeBytes { line -> HeraldError? in
            do throws(HeraldError) {
                try scanner.scan(line)
                return nil
            } catch {
                return error
            }
        }
    }

    /// The error scanning `text` throws, or nil when the line is accepted.
    static func error(_ text: String) -> HeraldError? { error(bytes(text)) }

    /// `{"data":"<content>"}` with `content` inserted as raw bytes.
    static func dataString(_ content: [UInt8]) -> [UInt8] {
        bytes(#"{"data":""#) + content + bytes(#""}"#)
    }

    /// The error an accessor throws, or nil when it returns normally.
    static func accessorError(_ text: String, _ read: (RequestScanner) throws(HeraldError) -> Void) throws -> HeraldError? {
        try scan(text) { scanner -> HeraldError? in
            do throws(HeraldError) {
                try read(scanner)
                return nil
            } catch {
                return error
            }
        }
    }
}
