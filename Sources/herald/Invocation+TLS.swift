import Herald
import HeraldArguments

/// The `--tls`, `--tls-ca FILE` and `--tls-insecure` flags: any of them turns TLS on.
struct TLSFlags {
    var enabled = false
    var caFile: String?
    var insecure = false

    /// Records one of the three flags.
    mutating func take(_ flag: ArgumentScanner.Flag, from scanner: inout ArgumentScanner) throws(ArgumentError) {
        enabled = true
        switch flag.name {
        case "--tls-ca": caFile = try scanner.value(for: flag)
        case "--tls-insecure":
            try flag.rejectValue()
            insecure = true
        default:
            try flag.rejectValue()
        }
    }

    /// The client's TLS options, or nil when no TLS flag was given. A CA file wins over
    /// `--tls-insecure`: verifying is the safe reading of contradictory flags.
    var options: TLSOptions? {
        guard enabled else { return nil }
        if let caFile { return .certificateAuthorities(file: caFile) }
        return insecure ? .insecure : TLSOptions(trust: .system)
    }
}
