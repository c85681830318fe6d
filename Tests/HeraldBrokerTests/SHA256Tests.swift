import Foundation
import Testing
import HeraldBroker

/// The hand-written SHA-256 against FIPS 180-4's examples and the system's `sha256sum`.
@Suite struct SHA256Tests {
    private func hex(_ text: String) -> String { SHA256.hex(SHA256.hash(Array(text.utf8))) }

    @Test func fipsExamples() {
        #expect(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")
            == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    @Test func millionAsInPiecesEqualsOneCall() {
        var hasher = SHA256()
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000)
        for _ in 0..<1_000 { hasher.update(chunk) }
        #expect(SHA256.hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func anySplitIntoUpdatesGivesTheSameDigest() {
        let message = (0..<200).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let whole = SHA256.hash(message)
        for split in 0...message.count {
            var hasher = SHA256()
            hasher.update(message[..<split])
            hasher.update(message[split...])
            #expect(hasher.finalize() == whole, "split at \(split)")
        }
        var bytewise = SHA256()
        for byte in message { bytewise.update(CollectionOfOne(byte)) }
        #expect(bytewise.finalize() == whole)
        var lazy = SHA256()
        lazy.update(message.lazy.map { $0 })
        #expect(lazy.finalize() == whole, "a sequence without contiguous storage")
    }

    /// Lengths around the padding boundaries (55, 56, 63, 64, 65 …) against `sha256sum`.
    @Test func agreesWithSha256sumAtBlockBoundaries() throws {
        var bytes: [UInt8] = []
        var state: UInt32 = 12345
        for _ in 0..<300 {
            state = state &* 1_103_515_245 &+ 12345
            bytes.append(UInt8(truncatingIfNeeded: state >> 16))
        }
        for length in [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 300] {
            let message = Array(bytes.prefix(length))
            #expect(SHA256.hex(SHA256.hash(message)) == (try sha256sum(message)), "length \(length)")
        }
    }

    private func sha256sum(_ message: [UInt8]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(message))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
    }

    @Test func tokenHashLineRoundTripsAndChecksTheToken() throws {
        let salt: [UInt8] = [0x01, 0x02, 0xab, 0xff]
        let line = TokenCredential.hashLine(token: Array("s3cret".utf8), salt: salt)
        #expect(line.hasPrefix("sha256:0102abff:"))
        // The digest is SHA-256 of the salt bytes followed by the token bytes.
        #expect(line == "sha256:0102abff:" + SHA256.hex(SHA256.hash(salt + Array("s3cret".utf8))))
        let credential = try #require(TokenCredential(hash: line))
        #expect(credential.accepts(Array("s3cret".utf8)))
        #expect(!credential.accepts(Array("s3creT".utf8)))
        #expect(!credential.accepts(Array("s3cret ".utf8)))
        #expect(!credential.accepts([]))
    }

    @Test func malformedTokenHashesAreRejected() {
        let digest = String(repeating: "ab", count: 32)
        #expect(TokenCredential(hash: "sha256::" + digest) != nil, "an empty salt is allowed")
        #expect(TokenCredential(hash: "sha1::" + digest) == nil)
        #expect(TokenCredential(hash: "sha256:0:" + digest) == nil, "odd salt hex")
        #expect(TokenCredential(hash: "sha256:zz:" + digest) == nil)
        #expect(TokenCredential(hash: "sha256:00:" + digest.dropLast(2)) == nil, "short digest")
        #expect(TokenCredential(hash: "sha256:00:" + digest + ":x") == nil)
        #expect(TokenCredential(hash: digest) == nil)
    }

    @Test func plainTokensAreCheckedTheSameWay() {
        let credential = TokenCredential(plainToken: Array("dev".utf8))
        #expect(credential.accepts(Array("dev".utf8)))
        #expect(!credential.accepts(Array("de".utf8)))
        #expect(credential.salt.isEmpty && credential.digest.count == 32)
    }
}
