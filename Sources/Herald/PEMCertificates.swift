import Foundation

/// The DER bytes of each `CERTIFICATE` block in a PEM text.
///
/// Shared (and tested on Linux) although only the Apple transport needs it: Network.framework
/// takes anchors as `SecCertificate`s made from DER, while OpenSSL reads the PEM file itself.
enum PEMCertificates {
    private static let begin = "-----BEGIN CERTIFICATE-----"
    private static let end = "-----END CERTIFICATE-----"

    /// Every certificate block's DER bytes, in file order; blocks that are not valid base64
    /// are skipped.
    /// - Parameter text: the PEM file's content.
    /// - Returns: one DER byte array per certificate.
    static func derBlocks(in text: String) -> [[UInt8]] {
        var blocks: [[UInt8]] = []
        var rest = text[...]
        while let start = rest.range(of: begin), let stop = rest.range(of: end, range: start.upperBound..<rest.endIndex) {
            let body = rest[start.upperBound..<stop.lowerBound]
            if let der = Data(base64Encoded: String(body), options: .ignoreUnknownCharacters), !der.isEmpty {
                blocks.append(Array(der))
            }
            rest = rest[stop.upperBound...]
        }
        return blocks
    }
}
