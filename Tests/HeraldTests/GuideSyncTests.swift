import Foundation
import Testing

/// docs/client.md quotes GuideExamples.swift; this keeps the quotes from drifting away from
/// the code the tests compile and run.
@Suite struct GuideSyncTests {
    @Test func guideExamplesAreTheCompiledOnes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let guide = try String(contentsOf: root.appendingPathComponent("docs/client.md"), encoding: .utf8)
        let examples = try String(contentsOf: root.appendingPathComponent("Tests/HeraldTests/GuideExamples.swift"), encoding: .utf8)
        let compiled = Set(examples.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        var checked = 0
        for section in ["## Requests and responders", "## Locks", "## Instance channels"] {
            let body = try #require(guide.components(separatedBy: section).dropFirst().first?.components(separatedBy: "\n## ").first)
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
        #expect(checked > 30)
    }
}
