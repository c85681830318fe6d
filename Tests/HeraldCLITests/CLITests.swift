import Foundation
import HeraldTestSupport
import Testing

@Suite struct CLITests {
    @Test func subPrintsJSONLinesAndExitsAfterCount() throws {
        let daemon = try TestDaemon()
        let sub = try startHerald(["sub", "chat.*", "--count", "2", "--json"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 1))
        let pub = try herald(["pub", "chat.lobby", #"{"text":"hi"}"#, "--receipt"] + at(daemon))
        #expect(pub.status == 0)
        #expect(pub.stdout == "seq 1 receivers 1\n")
        #expect(try herald(["pub", "chat.x", "-"] + at(daemon), stdin: "[1, 2]\n").status == 0)
        let result = sub.finish()
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix(#"{"ch":"chat.lobby","seq":1,"from":"c"#) == true)
        #expect(lines.first?.hasSuffix(#","data":{"text":"hi"}}"#) == true)
        #expect(lines.last?.hasSuffix(#","data":[1, 2]}"#) == true)
    }

    @Test func subPrettyPrintsAndTimesOut() throws {
        let daemon = try TestDaemon()
        let sub = try startHerald(["sub", "news", "--count", "3", "--timeout", "3"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 1))
        #expect(try herald(["pub", "news", "42"] + at(daemon)).status == 0)
        #expect(try herald(["pub", "news"] + at(daemon)).status == 0)
        let result = sub.finish()
        #expect(result.status == 5, "fewer than --count events before --timeout")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("news #1 c") == true)
        #expect(lines.first?.hasSuffix(" 42") == true)
        #expect(lines.last?.hasSuffix(" -") == true, "an event without data")
    }

    @Test func subGroupMembersShareEvents() throws {
        let daemon = try TestDaemon()
        let first = try startHerald(["sub", "jobs", "--group", "w", "--count", "1", "--json"] + at(daemon))
        let second = try startHerald(["sub", "jobs", "--group", "w", "--count", "1", "--json"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 2))
        for n in 1...2 { #expect(try herald(["pub", "jobs", "\(n)"] + at(daemon)).status == 0) }
        let outputs = [first.finish(), second.finish()]
        #expect(outputs.allSatisfy { $0.status == 0 })
        #expect(outputs.map { $0.stdout.split(separator: "\n").count } == [1, 1])
    }

    @Test func statsPrintsCountersPrettyAndAsJSON() throws {
        let daemon = try TestDaemon()
        let pretty = try herald(["stats"] + at(daemon))
        #expect(pretty.status == 0)
        let names = pretty.stdout.split(separator: "\n").map { $0.split(separator: " ").first.map(String.init) ?? "" }
        #expect(names.starts(with: ["uptime_ms", "connections", "total_connections", "channels", "subscriptions",
                                    "msgs_in", "msgs_out", "bytes_in", "bytes_out", "slow_consumers", "dropped"]))
        #expect(names.contains("signals") && names.contains("locks"))
        #expect(pretty.stdout.contains("\nconnections 1\n"))
        let json = try herald(["stats", "--json"] + at(daemon))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["connections"] as? Int == 1)
        #expect(object["ok"] == nil)
    }

    @Test func channelsListsWhatWasPublished() throws {
        let daemon = try TestDaemon()
        #expect(try herald(["pub", "b.two", "1"] + at(daemon)).status == 0)
        #expect(try herald(["pub", "a.one", "1"] + at(daemon)).status == 0)
        #expect(try herald(["pub", "a.one", "2"] + at(daemon)).status == 0)
        let pretty = try herald(["channels"] + at(daemon))
        #expect(pretty.status == 0)
        #expect(pretty.stdout == "a.one subs=0 seq=2\nb.two subs=0 seq=1\n")
        let json = try herald(["channels", "a.>", "--json"] + at(daemon))
        #expect(json.stdout == #"{"ch":"a.one","subs":0,"owner":null,"has_value":false,"seq":2}"# + "\n")
    }

    @Test func unixSocketWorks() throws {
        let daemon = try TestDaemon()
        let result = try herald(["pub", "u.x", "true", "--receipt", "--json", "--unix", daemon.unixPath])
        #expect(result.status == 0)
        #expect(result.stdout == #"{"seq":1,"receivers":0}"# + "\n")
    }

    @Test func exitCodesScriptsCanTrust() throws {
        let daemon = try TestDaemon()
        let forbidden = try herald(["pub", "$sys.x", "1"] + at(daemon))
        #expect(forbidden.status == 1)
        #expect(forbidden.stderr.contains("forbidden"))
        let badJSON = try herald(["pub", "a.b", "{not json"] + at(daemon))
        #expect(badJSON.status == 2)
        #expect(badJSON.stderr.contains("not valid JSON"))
        #expect(try herald(["pub", "a.*", "1"] + at(daemon)).status == 2)
        #expect(try herald(["pub"] + at(daemon)).status == 2)
        #expect(try herald(["stats", "--bogus"] + at(daemon)).status == 2)
        #expect(try herald(["stats", "--count", "2"] + at(daemon)).status == 2)
        #expect(try herald(["nope"] + at(daemon)).status == 2)
        #expect(try herald(["stats", "--port", "notaport"]).status == 2)
        #expect(try herald(["stats", "--unix", "/tmp/herald-no-such.sock"]).status == 3)
        let unanswered = try herald(["req", "a.b"] + at(daemon))
        #expect(unanswered.status == 6)
        #expect(unanswered.stderr == "herald: req: no responders on a.b\n")
        #expect(try herald(["req", "a.b", "--timeout", "0"] + at(daemon)).status == 2, "ms from 1")
        #expect(try herald(["req", "a.b", "--timeout", "1.5"] + at(daemon)).status == 2, "whole ms")
        #expect(try herald(["req", "$sys.x"] + at(daemon)).status == 1)
        // The daemon now serves retained state and signals: the generic commands work.
        let set = try herald(["set", "a.b", "1"] + at(daemon))
        #expect(set.status == 0)
        #expect(set.stdout == "1\n", "set prints the new rev")
        let got = try herald(["get", "a.b"] + at(daemon))
        #expect(got.status == 0)
        #expect(got.stdout == "1\n", "get prints the value")
        let signal = try herald(["signal", "a.b"] + at(daemon))
        #expect(signal.status == 0)
        #expect(signal.stdout.contains(#""handled_by":null"#))
    }

    @Test func reqPrintsTheReplyPrettyAndAsJSON() throws {
        let daemon = try TestDaemon()
        // A raw TCP client answers (not `herald reply`), so the requester is checked on its own.
        let responder = try RawResponder(port: daemon.port, channel: "calc.add", reply: #"{"sum":3}"#)
        defer { responder.close() }
        let pretty = try herald(["req", "calc.add", #"{"a":1,"b":2}"#, "--timeout", "10000"] + at(daemon))
        #expect(pretty.status == 0, "\(pretty.stderr)")
        #expect(pretty.stdout == #"{"sum":3}"# + "\n")
        let json = try herald(["req", "calc.add", "-", "--json"] + at(daemon), stdin: "[1,2]")
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout == #"{"from":"\#(responder.clientID)","data":{"sum":3}}"# + "\n")
        #expect(responder.requests == [#"{"a":1,"b":2}"#, "[1,2]"])
    }

    @Test func reqTimesOutWithExitFive() throws {
        let daemon = try TestDaemon()
        let silent = try startHerald(["sub", "slow.op", "--json"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 1))
        let result = try herald(["req", "slow.op", "1", "--timeout", "200"] + at(daemon))
        #expect(result.status == 5)
        #expect(result.stderr == "herald: req: no reply on slow.op within 200 ms\n")
        silent.process.terminate()
        let printed = silent.finish().stdout
        #expect(printed.hasPrefix(#"{"ch":"slow.op","seq":1,"from":"c"#), "the request reached the subscriber")
    }

    @Test func everyCommandHasHelp() throws {
        for command in ["pub", "sub", "req", "signal", "get", "set", "stats", "channels", "presence"] {
            let result = try herald([command, "--help"])
            #expect(result.status == 0)
            #expect(result.stdout.hasPrefix("Usage: herald \(command)"))
            #expect(result.stdout.contains("Exit codes:"))
        }
        let overview = try herald(["--help"])
        #expect(overview.status == 0)
        #expect(overview.stdout.contains("6 no responders"))
        #expect(try herald(["req", "--help"]).stdout.contains("--timeout MS"))
        #expect(overview.stdout.contains("Commands:"))
        #expect(try herald([]).status == 2)
    }
}
