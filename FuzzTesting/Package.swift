// swift-tools-version:6.0
import PackageDescription

/// The libFuzzer target, a package of its own so the sanitizer flags it is built with
/// (`-sanitize=fuzzer,address`) never reach the root package's normal builds. Build and run
/// it with `scripts/fuzz`; see docs/architecture.md, "Fuzzing".
let package = Package(
    name: "HeraldFuzz",
    products: [
        .executable(name: "herald-fuzz", targets: ["HeraldFuzz"]),
    ],
    dependencies: [
        .package(name: "Herald", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "HeraldFuzz",
            dependencies: [.product(name: "HeraldFuzzHarness", package: "Herald")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
