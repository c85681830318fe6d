import Foundation
import Testing

/// docs/client.md quotes the `HeraldExamples` target (Examples/); this keeps the quotes from
/// drifting away from the code the tests compile and run.
@Suite struct GuideSyncTests {
    @Test func guideExamplesAreTheCompiledOnes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let guide = try String(contentsOf: root.appendingPathComponent("docs/client.md"), encoding: .utf8)
        let folder = root.appendingPathComponent("Examples")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
        let examples = try files.map { try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8) }.joined(separator: "\n")
        let compiled = Set(examples.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        var checked = 0
        for section in ["## Requests and responders", "## Locks", "## Instance channels", "## Links",
                        "### Catching up from a seq", "### Chained calculated values", "## Main actor"] {
            let body = try #require(guide.components(separatedBy: section + "\n").dropFirst().first?.components(separatedBy: "\n#").first)
            for block in body.components(separatedBy: "```swift\n").dropFirst() {
                let code = block.components(separatedBy: "```").first ?? ""
                for line in code.split(separator: "\n") {
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    guard !trimmed.isEmpty, !trimmed.hasPrefix("//") else { continue }
                    #expect(compiled.contains(trimmed), "\(section): \(trimmed)")
                    checked += 1
                }
            }
        }
        #expect(checked > 45)
    }

    /// The DocC articles (Sources/Herald/Herald.docc) quote the compiled examples too; the
    /// getting-started article alone shows set-up lines (a manifest, a connect) of its own.
    @Test func doccArticlesQuoteTheCompiledExamples() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let folder = root.appendingPathComponent("Examples")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
        let examples = try files.map { try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8) }.joined(separator: "\n")
        let compiled = Set(examples.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        let catalog = root.appendingPathComponent("Sources/Herald/Herald.docc")
        let articles = try FileManager.default.contentsOfDirectory(atPath: catalog.path).filter { $0.hasSuffix(".md") && $0 != "GettingStarted.md" }
        var checked = 0
        for article in articles {
            let text = try String(contentsOf: catalog.appendingPathComponent(article), encoding: .utf8)
            for block in text.components(separatedBy: "```swift\n").dropFirst() {
                for line in (block.components(separatedBy: "```").first ?? "").split(separator: "\n") {
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    guard !trimmed.isEmpty, !trimmed.hasPrefix("//") else { continue }
                    #expect(compiled.contains(trimmed), "\(article): \(trimmed)")
                    checked += 1
                }
            }
        }
        #expect(articles.count >= 5)
        #expect(checked > 30)
    }
}
