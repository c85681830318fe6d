import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension TestClient {
    /// The client's own TCP port: the daemon logs it as the peer's (`peer=127.0.0.1:PORT`).
    var localPort: Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Issue 12: every log line about a client connection names the peer (`peer=127.0.0.1:54321`,
/// `peer=unix`), and the server logs auth failures and slow consumers with it.
@Suite struct ConnectionLogTests {
    @Test func connectAndDisconnectLinesCarryThePeerAddress() throws {
        let daemon = try DaemonProcess(config: #"log_level: "debug","#)
        let client = try daemon.client()
        let peer = "peer=127.0.0.1:" + String(client.localPort)
        #expect(daemon.waitForLog("connected", peer))
        client.closeNow()
        #expect(daemon.waitForLog("disconnected", peer, "reason=peer_closed"), "\(daemon.log.joined(separator: "\n"))")
    }

    @Test func unixSocketConnectionsAreLoggedAsPeerUnix() throws {
        let folder = "/tmp/hl-" + String(UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/heraldd.sock"
        let daemon = try DaemonProcess(config: #"log_level: "debug","#, arguments: ["--unix", path])
        let client = try TestClient(unixPath: path)
        _ = try client.frame()
        #expect(daemon.waitForLog("connected", "peer=unix"))
        client.closeNow()
        #expect(daemon.waitForLog("disconnected", "peer=unix"))
    }

    @Test func wrongTokenIsLoggedAsAnAuthFailureWithThePeer() throws {
        let daemon = try DaemonProcess(config: #"auth: { users: [{ name: "dev", token: "dev-token" }] },"#)
        let client = try daemon.client()
        let peer = "peer=127.0.0.1:" + String(client.localPort)
        #expect(try client.request(#"{"op":"hello","token":"guess"}"#)["error"] as? String == "forbidden")
        #expect(client.isClosedByPeer())
        #expect(daemon.waitForLog("info", "auth failed", peer, "reason=forbidden"), "\(daemon.log.joined(separator: "\n"))")
    }

    @Test func authTimeoutIsLoggedAsAnAuthFailureWithThePeer() throws {
        let daemon = try DaemonProcess(config: #"auth: { users: [{ name: "dev", token: "dev-token" }] }, auth_timeout_ms: 200,"#)
        let client = try daemon.client()
        let peer = "peer=127.0.0.1:" + String(client.localPort)
        #expect(client.isClosedByPeer())
        #expect(daemon.waitForLog("auth failed", peer, "reason=auth_required"), "\(daemon.log.joined(separator: "\n"))")
    }

    @Test func slowConsumerIsLoggedAsAWarningWithThePeer() throws {
        let daemon = try DaemonProcess(config: "max_pending: 65536")
        let slow = try daemon.client()
        let peer = "peer=127.0.0.1:" + String(slow.localPort)
        let publisher = try daemon.client()
        #expect(try floodPastMaxPending(subscriber: slow, publisher: publisher) == 3000)
        #expect(daemon.waitForLog("warn", "slow consumer disconnected", peer, "reason=slow_consumer"),
                "\(daemon.log.joined(separator: "\n"))")
    }
}

/// The HTTP monitor's request lines name the peer too.
@Suite struct MonitorLogTests {
    @Test func monitorRequestLinesCarryThePeerAddress() throws {
        let daemon = try DaemonProcess(config: #"monitor_port: 0, log_level: "debug","#)
        let port = try daemon.monitorPort()
        #expect(try HTTPTestClient.request("GET", "/healthz", port: port).status == 200)
        #expect(daemon.waitForLog("http", "request=", "peer=127.0.0.1:"), "\(daemon.log.joined(separator: "\n"))")
    }
}
