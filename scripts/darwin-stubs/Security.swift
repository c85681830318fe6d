// Linux stand-ins (scripts/darwin-typecheck) for the Security declarations NetworkTransport+TLS.swift uses, written from
// Apple's documentation: only to type-check that file's own logic on Linux.
import Foundation
public typealias OSStatus = Int32
public let errSecSuccess: OSStatus = 0
public typealias CFData = NSData
public typealias CFArray = NSArray
public final class CFError {}
public final class CFAllocator {}
public final class SecTrust {}
public final class SecCertificate {}
public final class sec_protocol_options_t { public init() {} }
public final class sec_protocol_metadata_t {}
public final class sec_trust_t {}
public typealias sec_protocol_verify_complete_t = (Bool) -> Void
public typealias sec_protocol_verify_t = (sec_protocol_metadata_t, sec_trust_t, @escaping sec_protocol_verify_complete_t) -> Void
public func sec_protocol_options_set_tls_server_name(_ options: sec_protocol_options_t, _ server_name: UnsafePointer<CChar>) {}
public func sec_protocol_options_set_verify_block(_ options: sec_protocol_options_t, _ verify_block: @escaping sec_protocol_verify_t, _ verify_block_queue: DispatchQueue) {}
public func sec_trust_copy_ref(_ trust: sec_trust_t) -> Unmanaged<SecTrust> { Unmanaged.passRetained(SecTrust()) }
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? { nil }
public func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: CFArray?) -> OSStatus { 0 }
public func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus { 0 }
public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool { false }
