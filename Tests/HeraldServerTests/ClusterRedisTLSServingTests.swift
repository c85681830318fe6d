import Foundation
import HeraldTestSupport
import Testing

/// Redis over TLS the documented way (issue 32, item 8; docs/cluster.md, "Redis over TLS"):
/// Debian's stunnel4 beside the node with the shipped `config/stunnel-redis.conf`, Redis
/// answering only TLS on the port stunnel connects to.
@Suite(.serialized) struct ClusterRedisTLSServingTests {
    /// The repository's `config/stunnel-redis.conf`.
    private static var shippedConfig: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("config/stunnel-redis.conf")
    }

    /// stunnel in the foreground with the shipped config, pointed at `tlsPort` and trusting
    /// `ca`; returns it and the local plain port it listens on.
    private func stunnel(tlsPort: Int, ca: String, checkHost: String, folder: URL) throws -> (Process, Int) {
        let local = try TestRedis.freePort()
        var text = try String(contentsOf: Self.shippedConfig, encoding: .utf8)
        for (from, to) in [("foreground = no", "foreground = yes"),
                           ("pid = /run/stunnel-redis.pid", "pid = " + folder.appendingPathComponent("stunnel.pid").path),
                           ("accept = 127.0.0.1:6380", "accept = 127.0.0.1:\(local)"),
                           ("connect = redis.example.internal:6379", "connect = 127.0.0.1:\(tlsPort)"),
                           ("CAfile = /etc/herald/redis-ca.pem", "CAfile = " + ca),
                           ("checkHost = redis.example.internal", "checkHost = " + checkHost)] {
            #expect(text.contains(from), "the shipped config has \(from)")
            text = text.replacingOccurrences(of: from, with: to)
        }
        let config = folder.appendingPathComponent("stunnel.conf")
        try text.write(to: config, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/stunnel4")
        process.arguments = [config.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, local)
    }

    private func tlsRedis(_ certificate: TestCertificate) throws -> (TestRedis, Int) {
        let tlsPort = try TestRedis.freePort()
        let redis = try TestRedis(extraArguments: ["--tls-port", String(tlsPort), "--tls-cert-file", certificate.certificatePath,
                                                   "--tls-key-file", certificate.keyPath, "--tls-ca-cert-file",
                                                   certificate.certificatePath, "--tls-auth-clients", "no"])
        return (redis, tlsPort)
    }

    @Test func nodesReachRedisThroughStunnelWithTheShippedConfig() async throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let (redis, tlsPort) = try tlsRedis(certificate)
        defer { redis.stop() }
        let (tunnel, local) = try stunnel(tlsPort: tlsPort, ca: certificate.certificatePath, checkHost: "localhost",
                                          folder: certificate.directory)
        defer { killAndReap(tunnel) }
        #expect(await eventually(within: 10) { TestRedis.ping(port: local) }, "stunnel answers")
        let nodes = try ["n0", "n1"].map { name in
            try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(local)", node: "\#(name)", node_timeout_ms: 1000 },"#,
                              arguments: ["--workers", "1"])
        }
        let (subscriber, _) = try ClusterTestNodes.client(nodes[0])
        try ClusterTestNodes.ok(subscriber, #"{"op":"sub","ch":"tls.x"}"#, "sub")
        let (publisher, _) = try ClusterTestNodes.client(nodes[1])
        try ClusterTestNodes.ok(publisher, #"{"op":"pub","ch":"tls.x","data":7,"rid":1}"#, "pub")
        #expect(try subscriber.frame()["data"] as? Int == 7)
        // What the nodes wrote went over TLS: Redis counts the connections on its TLS port.
        let listing = RedisCommandLine.run(port: redis.port, ["CLIENT", "LIST"])?.text ?? ""
        #expect(listing.contains("laddr=127.0.0.1:\(tlsPort)"), "\(listing)")
    }

    @Test func aCertificateStunnelDoesNotTrustKeepsTheNodeFromStarting() throws {
        let certificate = try TestCertificate()
        let stranger = try TestCertificate()
        defer { certificate.remove(); stranger.remove() }
        let (redis, tlsPort) = try tlsRedis(certificate)
        defer { redis.stop() }
        let (tunnel, local) = try stunnel(tlsPort: tlsPort, ca: stranger.certificatePath, checkHost: "localhost",
                                          folder: certificate.directory)
        defer { killAndReap(tunnel) }
        usleep(300_000)
        #expect(throws: (any Error).self, "no Redis behind an unverified certificate") {
            try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(local)", node: "n0" },"#, arguments: ["--workers", "1"])
        }
    }
}
