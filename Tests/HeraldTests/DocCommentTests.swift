import Foundation
import Testing

/// Every public declaration of the `Herald` module has a `///` doc comment (the DocC check of
/// issue 7): a `public`/`open` declaration, or a `case` of a public enum, must follow a `///`
/// line (attributes such as `@discardableResult` may stand between).
@Suite struct DocCommentTests {
    /// The declarations without a doc comment, as `file:line: text`.
    static func undocumented(in folder: URL) throws -> [String] {
        var missing: [String] = []
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }.sorted()
        for file in files {
            let lines = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            var depth = 0
            var publicEnumDepth: Int?
            for (index, line) in lines.enumerated() {
                let isPublic = line.hasPrefix("public ") || line.hasPrefix("open ")
                    || (line.hasPrefix("@") && (line.contains(" public ") || line.contains(" open ")))
                let isEnumCase = publicEnumDepth.map { depth == $0 + 1 } == true && line.hasPrefix("case ")
                if isPublic || isEnumCase {
                    var previous = index - 1
                    while previous >= 0, lines[previous].hasPrefix("@") { previous -= 1 }
                    if previous < 0 || !lines[previous].hasPrefix("///") {
                        missing.append("\(file):\(index + 1): \(line)")
                    }
                }
                if line.hasPrefix("public enum ") || line.hasPrefix("public indirect enum ") { publicEnumDepth = depth }
                depth += line.filter { $0 == "{" }.count - line.filter { $0 == "}" }.count
                if let enumDepth = publicEnumDepth, depth <= enumDepth, line.contains("}") { publicEnumDepth = nil }
            }
        }
        return missing
    }

    @Test func everyPublicDeclarationInHeraldHasADocComment() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let missing = try Self.undocumented(in: root.appendingPathComponent("Sources/Herald"))
        #expect(missing.isEmpty, "undocumented public declarations:\n\(missing.joined(separator: "\n"))")
    }

    @Test func checkerFindsAnUndocumentedDeclaration() throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("doc-check-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = """
        /// Documented.
        public struct A {
            /// Documented.
            @discardableResult
            public func f() -> Int { 1 }
            public var bare: Int { 2 }
        }
        /// Documented.
        public enum E {
            /// Documented.
            case one
            case two
        }
        """
        try source.write(to: folder.appendingPathComponent("A.swift"), atomically: true, encoding: .utf8)
        #expect(try Self.undocumented(in: folder) == ["A.swift:6: public var bare: Int { 2 }", "A.swift:12: case two"])
    }
}
