import Foundation
import HeraldTestSupport
import Testing

/// `herald clients`, `herald kick CLIENT` and `herald handlers CHANNEL` (issue 37, admin ops).
@Suite struct CLIAdminTests {
    @Test func clientsListsEveryConnectionAndKickClosesOne() throws {
        let daemon = try TestDaemon()
        let member = try startHerald(["sub", "room.9", "--timeout", "8"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 1))
        let listed = try herald(["clients", "--json"] + at(daemon))
        #expect(listed.status == 0)
        let objects = try listed.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        let subscriber = objects.first { $0["subs"] as? Int == 1 }
        #expect(objects.count == 2 && subscriber?["transport"] as? String == "tcp", "the sub and this command: \(objects)")
        let id = subscriber?["client"] as? String ?? "?"
        let pretty = try herald(["clients"] + at(daemon))
        #expect(pretty.stdout.split(separator: "\n").contains { $0.hasPrefix(id + " - ") }, "CLIENT USER NAME …")

        let kicked = try herald(["kick", id] + at(daemon))
        #expect(kicked.status == 0 && kicked.stdout == "kicked \(id)\n", "\(kicked)")
        member.process.waitUntilExit()
        #expect(member.process.terminationStatus != 0, "the kicked sub ends with an error")
        let again = try herald(["kick", id] + at(daemon))
        #expect(again.status == 7 && again.stdout == "no connection \(id)\n")
    }

    @Test func handlersListsAChannelsSignalHandlersInTheOrderASignalAsksThem() throws {
        let daemon = try TestDaemon()
        let first = try startHerald(["handle", "app.settings", "--timeout", "8"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 1))
        let second = try startHerald(["handle", "app.settings", "--stop", "--timeout", "8"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 2))
        let listed = try herald(["handlers", "app.settings"] + at(daemon))
        #expect(listed.status == 0, "\(listed)")
        let ids = listed.stdout.split(separator: "\n").map(String.init)
        #expect(ids.count == 2 && ids.allSatisfy { $0.hasPrefix("c") }, "\(ids)")
        let json = try herald(["handlers", "app.settings", "--json"] + at(daemon))
        let array = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String]
        #expect(array == ids, "the same handlers as one array")
        let none = try herald(["handlers", "app.other"] + at(daemon))
        #expect(none.status == 0 && none.stdout.isEmpty, "no handlers: nothing printed")
        let pattern = try herald(["handlers", "app.*"] + at(daemon))
        #expect(pattern.status == 1 && pattern.stderr.contains("bad_channel"), "\(pattern)")
        first.process.terminate()
        second.process.terminate()
    }
}
