import Testing
@testable import HeraldServer

@Suite struct ArgumentScannerTests {
    @Test func yieldsFlagsInlineValuesAndPositionals() {
        var scanner = ArgumentScanner(["pub", "--ch=a.b", "-v", "-", "-5", "--", "--not-a-flag"])
        var tokens: [ArgumentScanner.Token] = []
        while let token = scanner.next() { tokens.append(token) }
        #expect(tokens == [
            .positional("pub"),
            .flag(.init(name: "--ch", inlineValue: "a.b")),
            .flag(.init(name: "-v")),
            .positional("-"),
            .positional("-5"),
            .positional("--not-a-flag"),
        ])
    }

    @Test func valueForFlagConsumesTheNextArgument() throws {
        var scanner = ArgumentScanner(["--port", "-1", "rest"])
        guard case .flag(let flag)? = scanner.next() else {
            Issue.record("expected a flag")
            return
        }
        #expect(try scanner.value(for: flag) == "-1")
        #expect(scanner.remaining == ["rest"])
    }
}
