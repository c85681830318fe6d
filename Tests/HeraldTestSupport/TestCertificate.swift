import Foundation

/// A self-signed certificate and key made with the `openssl` command for one test.
///
/// Made at test time rather than committed: nothing expires in the repository, and each test
/// gets its own CA, so "the wrong CA" is simply another `TestCertificate`. EC P-256 keys take
/// milliseconds to generate; RSA keys (for ECDHE-RSA and static-RSA cipher suites) a little
/// longer. Valid for `localhost` and `127.0.0.1` (subjectAltName).
public struct TestCertificate: Sendable {
    /// The kind of key: it decides which TLS 1.2 cipher suites can be negotiated at all
    /// (`ECDHE-ECDSA-…` needs an EC key, `ECDHE-RSA-…` and static `AES128-SHA` an RSA key).
    public enum KeyType: Sendable {
        /// EC on the P-256 curve (the default).
        case ecP256
        /// RSA, 2048 bits.
        case rsa2048

        var newKeyArguments: [String] {
            switch self {
            case .ecP256: return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
            case .rsa2048: return ["-newkey", "rsa:2048"]
            }
        }
    }

    /// The folder holding both files (removed by `remove()`).
    public let directory: URL
    /// PEM certificate; also the CA file a client trusts.
    public var certificatePath: String { directory.appendingPathComponent("cert.pem").path }
    /// PEM private key (unencrypted).
    public var keyPath: String { directory.appendingPathComponent("key.pem").path }

    /// Generates a fresh certificate and key in a new temporary folder.
    /// - Parameter keyType: EC P-256 unless a test needs RSA.
    /// - Throws: `TestCertificateError` with openssl's output when generation fails.
    public init(keyType: KeyType = .ecP256) throws {
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("hc-" + String(UUID().uuidString.prefix(8)))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.opensslPath)
        process.arguments = ["req", "-x509"] + keyType.newKeyArguments + ["-nodes", "-days", "2", "-subj", "/CN=localhost",
                             "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                             "-keyout", directory.appendingPathComponent("key.pem").path,
                             "-out", directory.appendingPathComponent("cert.pem").path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestCertificateError.opensslFailed(String(decoding: text, as: UTF8.self))
        }
    }

    /// The `openssl` command (Debian package `openssl`, installed by scripts/bootstrap).
    public static var opensslPath: String {
        ["/usr/bin/openssl", "/usr/local/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/openssl"
    }

    /// The config keys for a TLS listener on an ephemeral port with this certificate.
    public var daemonConfig: String {
        "tls_port: 0, tls_cert: \"\(certificatePath)\", tls_key: \"\(keyPath)\","
    }

    /// Deletes the files.
    public func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Why a test certificate could not be made.
public enum TestCertificateError: Error {
    /// `openssl req` failed; carries its output.
    case opensslFailed(String)
}
