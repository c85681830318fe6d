import Foundation
import HeraldTestSupport
import Testing

/// `herald clients` and `herald kick CLIENT` (issue 37, admin ops).
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
}
