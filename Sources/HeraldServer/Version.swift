/// The daemon's version, reported by `--version` and in the `info` frame.
public enum Version {
    /// Semantic version of this build.
    public static let current = "0.1.0"
}
