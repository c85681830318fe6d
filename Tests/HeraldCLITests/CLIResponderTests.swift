import Foundation
import HeraldTestSupport
import Testing

/// `herald reply`, `herald handle` and `herald bench` against a real daemon.
@Suite struct CLIResponderTests {
    @Test func replyAnswersRequestsWithFixedData() throws {
        let daemon = try TestDaemon()
        let responder = try startHerald(["reply", "calc.add", "--data", #"{"sum":3}"#, "--count", "2", "--json"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 1))
        // A plain event is not a request: not answered, not printed, not counted.
        #expect(try herald(["pub", "calc.add", "0"] + at(daemon)).status == 0)
        let pretty = try herald(["req", "calc.add", #"{"a":1,"b":2}"#, "--timeout", "60000"] + at(daemon))
        #expect(pretty.status == 0, "\(pretty.stderr)")
        #expect(pretty.stdout == #"{"sum":3}"# + "\n")
        let json = try herald(["req", "calc.add", "[1,2]", "--json", "--timeout", "60000"] + at(daemon))
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout.hasPrefix(#"{"from":"c"#) && json.stdout.hasSuffix(#","data":{"sum":3}}"# + "\n"))
        let result = responder.finish()
        #expect(result.status == 0, "exits after --count requests")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix(#"{"ch":"calc.add","seq":2,"from":"c"#) == true)
        #expect(lines.first?.hasSuffix(#","data":{"a":1,"b":2}}"#) == true)
        #expect(lines.last?.hasSuffix(#","data":[1,2]}"#) == true)
    }

    @Test func replyWithoutDataAndATimeout() throws {
        let daemon = try TestDaemon()
        let responder = try startHerald(["reply", "ops.>", "--count", "2", "--timeout", "3"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 1))
        let answered = try herald(["req", "ops.ping", "--timeout", "10000"] + at(daemon))
        #expect(answered.status == 0)
        #expect(answered.stdout == "-\n", "a reply without data")
        let result = responder.finish()
        #expect(result.status == 5, "one of two requests before --timeout")
        #expect(result.stdout.hasPrefix("ops.ping #1 c"))
        #expect(result.stdout.hasSuffix(" -\n"))
        #expect(try herald(["reply", "a.b", "--data", "{nope"] + at(daemon)).status == 2)
        #expect(try herald(["reply"] + at(daemon)).status == 2)
        #expect(try herald(["reply", "a.b", "--stop"] + at(daemon)).status == 2)
    }

    @Test func handleCallsBackAndStopsTheSignal() throws {
        let daemon = try TestDaemon()
        let handler = try startHerald(["handle", "app.settings", "--stop", "--callback", #"{"saving":true}"#,
                                       "--count", "1", "--json"] + at(daemon))
        let passer = try startHerald(["handle", "app.settings.profile", "--count", "1"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 2))
        let signal = try herald(["signal", "app.settings.profile", #""save""#, "--timeout", "10"] + at(daemon))
        #expect(signal.status == 0, "\(signal.stderr)")
        let lines = signal.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix(#"{"callback":{"saving":true},"from":"c"#) == true, "the callback comes first")
        #expect(lines.last?.hasPrefix(#"{"id":"g1","handled_by":"c"#) == true)
        #expect(lines.last?.hasSuffix(#"/h1","at":"app.settings","hops":2,"timeouts":[]}"#) == true)

        let handled = handler.finish()
        #expect(handled.status == 0)
        #expect(handled.stdout.hasPrefix(#"{"level":"app.settings","origin":"app.settings.profile","id":"g1","from":"c"#))
        #expect(handled.stdout.hasSuffix(#","data":"save"}"# + "\n"))
        let passed = passer.finish()
        #expect(passed.status == 0)
        #expect(passed.stdout.hasPrefix("app.settings.profile app.settings.profile c"))
        #expect(passed.stdout.hasSuffix(#" "save""# + "\n"))
    }

    @Test func benchPrintsThroughputAndLatency() throws {
        let daemon = try TestDaemon()
        let pretty = try herald(["bench", "--count", "500", "--size", "100"] + at(daemon))
        #expect(pretty.status == 0, "\(pretty.stderr)")
        let names = pretty.stdout.split(separator: "\n").map { $0.split(separator: " ").first.map(String.init) ?? "" }
        #expect(names == ["messages", "size", "seconds", "msgs/s", "p50_ms", "p99_ms"])
        #expect(pretty.stdout.hasPrefix("messages 500\nsize 100\n"))

        let json = try herald(["bench", "bench.json", "--count", "200", "--json"] + at(daemon))
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["messages"] as? Int == 200)
        #expect(Set(object.keys) == ["messages", "size", "seconds", "msgs_per_s", "p50_ms", "p99_ms"])
        let p50 = try #require(object["p50_ms"] as? Double)
        let p99 = try #require(object["p99_ms"] as? Double)
        #expect(p50 > 0 && p50 <= p99)
        #expect(try herald(["bench", "--size", "0"] + at(daemon)).status == 2)
        #expect(try herald(["bench", "--port", "1"]).status == 3)
    }

    @Test func newCommandsHaveHelp() throws {
        for command in ["reply", "handle", "bench"] {
            let result = try herald([command, "--help"])
            #expect(result.status == 0)
            #expect(result.stdout.hasPrefix("Usage: herald \(command)"))
            #expect(result.stdout.contains("Exit codes:"))
        }
        #expect(try herald(["--help"]).stdout.contains("bench [CHANNEL]"))
    }
}
