import Foundation
import HeraldTestSupport
import Testing

/// `herald --token` against a daemon with users.
@Suite struct CLIAuthTests {
    private static let config = """
        auth: { users: [ { name: "cli", token: "cli-secret", publish: { allow: ["ok.>"] } } ] }
        """

    @Test func goodTokenPublishesAndReadsState() throws {
        let daemon = try TestDaemon(config: Self.config)
        let pub = try herald(["pub", "ok.x", "1", "--receipt", "--token", "cli-secret"] + at(daemon))
        #expect(pub.status == 0, "\(pub.stderr)")
        #expect(pub.stdout == "seq 1 receivers 0\n")
        let set = try herald(["set", "ok.v", "42", "--token", "cli-secret"] + at(daemon))
        #expect(set.status == 0, "\(set.stderr)")
        let get = try herald(["get", "ok.v", "--token", "cli-secret"] + at(daemon))
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stdout.contains("42"))
    }

    @Test func badOrMissingTokenFailsWithTheReason() throws {
        let daemon = try TestDaemon(config: Self.config)
        let bad = try herald(["pub", "ok.x", "1", "--token", "nope"] + at(daemon))
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("forbidden"), "\(bad.stderr)")
        let missing = try herald(["pub", "ok.x", "1"] + at(daemon))
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("auth_required"), "\(missing.stderr)")
    }

    @Test func goodTokenOutsideThePermissionsIsForbidden() throws {
        let daemon = try TestDaemon(config: Self.config)
        let result = try herald(["pub", "other", "1", "--receipt", "--token", "cli-secret"] + at(daemon))
        #expect(result.status != 0)
        #expect(result.stderr.contains("forbidden"), "\(result.stderr)")
    }
}
