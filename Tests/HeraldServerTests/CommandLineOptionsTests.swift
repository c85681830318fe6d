import Testing
@testable import HeraldServer

/// The error message `parse` gives for `args`, or `nil` if they parsed.
private func parseError(_ args: [String]) -> String? {
    do {
        _ = try CommandLineOptions.parse(args)
        return nil
    } catch {
        return error.description
    }
}

@Suite struct CommandLineOptionsTests {
    @Test func noArgumentsOverrideNothing() throws {
        let options = try CommandLineOptions.parse([])
        #expect(options == CommandLineOptions())
        #expect(try options.apply(to: Config()) == Config())
    }

    @Test func everyFlagIsParsedInBothSpellings() throws {
        let spaced = try CommandLineOptions.parse([
            "--config", "c.json5", "--host", "::1", "--port", "9000", "--unix", "/tmp/h.sock",
            "--data-dir", "d", "--workers", "3", "--log-level", "debug", "--check-config", "--version", "--help",
        ])
        let inline = try CommandLineOptions.parse([
            "--config=c.json5", "--host=::1", "--port=9000", "--unix=/tmp/h.sock",
            "--data-dir=d", "--workers=3", "--log-level=debug", "--check-config", "--version", "-h",
        ])
        let expected = CommandLineOptions(
            configPath: "c.json5", host: "::1", port: 9000, unix: "/tmp/h.sock", dataDir: "d", workers: 3,
            logLevel: .debug, checkConfig: true, showVersion: true, showHelp: true
        )
        #expect(spaced == expected)
        #expect(inline == expected)
    }

    @Test func inlineValueKeepsLaterEqualsSigns() throws {
        #expect(try CommandLineOptions.parse(["--data-dir=a=b"]).dataDir == "a=b")
    }

    @Test func portZeroIsAcceptedForAnEphemeralPort() throws {
        let options = try CommandLineOptions.parse(["--port=0"])
        #expect(options.port == 0)
        #expect(try options.apply(to: Config()).port == 0)
    }

    @Test func flagsOverrideConfigValues() throws {
        var fromFile = Config()
        fromFile.host = "10.0.0.1"
        fromFile.port = 8000
        fromFile.workers = 2
        fromFile.logLevel = .warn
        fromFile.maxLine = 4096
        let options = try CommandLineOptions.parse(["--port", "9001", "--log-level", "error", "--unix", "/tmp/s"])

        let config = try options.apply(to: fromFile)

        #expect(config.port == 9001)
        #expect(config.logLevel == .error)
        #expect(config.unix == "/tmp/s")
        #expect(config.host == "10.0.0.1")
        #expect(config.workers == 2)
        #expect(config.maxLine == 4096)
    }

    @Test func repeatedFlagKeepsTheLastValue() throws {
        #expect(try CommandLineOptions.parse(["--port", "1", "--port=2"]).port == 2)
    }

    @Test func unknownFlagErrorNamesTheFlag() {
        #expect(parseError(["--prot", "7400"]) == "unknown flag \"--prot\" (see --help)")
        #expect(parseError(["-x"]) == "unknown flag \"-x\" (see --help)")
    }

    @Test func missingValueErrorNamesTheFlag() {
        #expect(parseError(["--port"]) == "--port: missing value")
        #expect(parseError(["--unix", "--port", "1"]) == "--unix: missing value")
    }

    @Test func badNumberErrorNamesTheFlagAndRange() {
        #expect(parseError(["--port", "abc"]) == "--port: bad value \"abc\" (expected an integer in 0...65535)")
        #expect(parseError(["--workers="]) == "--workers: bad value \"\" (expected an integer in 1...64)")
    }

    @Test func badLogLevelErrorListsTheChoices() {
        #expect(parseError(["--log-level", "loud"])
            == "--log-level: bad value \"loud\" (expected one of \"debug\", \"info\", \"warn\", \"error\")")
    }

    @Test func switchGivenAValueIsAnError() {
        #expect(parseError(["--help=yes"]) == "--help: takes no value, got \"yes\"")
    }

    @Test func positionalArgumentIsAnError() {
        #expect(parseError(["serve"]) == "unexpected argument \"serve\"")
    }

    @Test func outOfRangeFlagFailsOnApplyNamingTheFlag() throws {
        let port = try CommandLineOptions.parse(["--port", "70000"])
        #expect(throws: ConfigError("--port: bad value \"70000\" (expected an integer in 0...65535)")) {
            try port.apply(to: Config())
        }
        let workers = try CommandLineOptions.parse(["--workers", "0"])
        #expect(throws: ConfigError("--workers: bad value \"0\" (expected an integer in 1...64)")) {
            try workers.apply(to: Config())
        }
        let host = try CommandLineOptions.parse(["--host="])
        #expect(throws: ConfigError("--host: bad value \"\" (expected a non-empty string)")) {
            try host.apply(to: Config())
        }
    }

    @Test func helpTextListsEveryFlagWithADescription() {
        let help = CommandLineOptions.helpText
        for flag in ["--config", "--host", "--port", "--unix", "--data-dir", "--workers", "--log-level",
                     "--check-config", "--repair", "--hash-token", "--reshard", "--key-prefix", "--version", "--help", "-h"] {
            #expect(help.contains(flag), "help text lacks \(flag)")
        }
        #expect(help.contains("(default: 7400)"))
        #expect(help.contains("(default: 127.0.0.1)"))
        #expect(help.contains("(default: info)"))
        let flagLines = help.split(separator: "\n").filter { $0.hasPrefix("  -") }
        #expect(flagLines.count == 14)
    }
}

@Suite struct RepairFlagTests {
    @Test func repairIsASwitch() throws {
        #expect(try CommandLineOptions.parse(["--repair"]).repair)
        #expect(try !CommandLineOptions.parse([]).repair)
        #expect(throws: ConfigError.self) { try CommandLineOptions.parse(["--repair=yes"]) }
    }
}
