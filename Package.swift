// swift-tools-version:6.0
import PackageDescription

/// Herald: a pub/sub daemon for app events. See docs/architecture.md for the module map.
///
/// `platforms`: the client uses `Mutex`/`Atomic` (module Synchronization: macOS 15, iOS 18,
/// tvOS 18, watchOS 11, visionOS 2), which also cover Observation (macOS 14, iOS 17); the
/// oldest releases with both are declared (docs/client.md, "Platforms").
let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .executable(name: "heraldd", targets: ["heraldd"]),
        .executable(name: "herald-bench", targets: ["herald-bench"]),
        .library(name: "HeraldWire", targets: ["HeraldWire"]),
        .library(name: "Herald", targets: ["Herald"]),
        .executable(name: "herald", targets: ["herald"]),
        .library(name: "HeraldFuzzHarness", targets: ["HeraldFuzzHarness"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // No pkgConfig: hiredis.pc adds -D_FILE_OFFSET_BITS=64, which SwiftPM warns about;
        // the headers are in /usr/include/hiredis and the module map links the library.
        .systemLibrary(
            name: "CHiredis",
            providers: [.apt(["libhiredis-dev"])]
        ),
        // Header only: `__builtin_prefetch` for the broker's look-ahead (`PublishLookahead`).
        .systemLibrary(name: "CPrefetch"),
        .target(name: "HeraldTLS", dependencies: ["COpenSSL"]),
        // No unsafe flags in anything the `Herald` product links: SwiftPM refuses them in a
        // versioned dependency (scripts/dependency-check). HeraldWire gains nothing from
        // `-enforce-exclusivity=unchecked` (callgrind: no dynamic access checks of its own on
        // the publish path since `RequestScanner`'s properties are `@exclusivity(unchecked)`),
        // so it is built like any library.
        .target(name: "HeraldWire"),
        // Daemon-only: the broker's dynamic exclusivity checks cost ~2,300 instructions per
        // delivered message (3,293 with the flag, 5,616 without: callgrind, 100k pub->sub 16 B,
        // docs/architecture.md). No product an app uses exports it; HeraldFuzzHarness is for the
        // in-repo fuzz package, a path dependency, where SwiftPM allows unsafe flags.
        .target(
            name: "HeraldBroker",
            dependencies: ["HeraldWire", "CPrefetch"],
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"])]
        ),
        .target(name: "HeraldArguments"),
        // Replays fuzz inputs through the framer and broker; Fuzz/ links it into libFuzzer.
        .target(name: "HeraldFuzzHarness", dependencies: ["HeraldWire", "HeraldBroker"]),
        .target(
            name: "HeraldServer",
            dependencies: ["CLibUV", "CHiredis", "COpenSSL", "HeraldWire", "HeraldBroker", "HeraldArguments", "HeraldTLS"]
        ),
        // OpenSSL only on Linux: on Apple platforms the client's transport is Network.framework.
        .target(
            name: "Herald",
            dependencies: ["HeraldWire", .target(name: "HeraldTLS", condition: .when(platforms: [.linux]))]
        ),
        .executableTarget(name: "herald", dependencies: ["Herald", "HeraldWire", "HeraldArguments"]),
        .executableTarget(
            name: "heraldd",
            dependencies: ["HeraldServer"]
        ),
        // How fast one client subscriber takes events, per delivery path (docs/benchmarks.md).
        .executableTarget(name: "herald-client-bench", dependencies: ["Herald"]),
        .executableTarget(
            name: "herald-bench",
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"])]
        ),
        .testTarget(name: "HeraldWireTests", dependencies: ["HeraldWire"]),
        .testTarget(
            name: "HeraldBrokerTests",
            dependencies: ["HeraldBroker", "HeraldWire", "HeraldFuzzHarness"],
            exclude: ["FuzzRegressions"]
        ),
        .testTarget(name: "HeraldServerTests", dependencies: ["HeraldServer", "HeraldWire", "HeraldTLS", "HeraldTestSupport", "heraldd"]),
        .target(name: "HeraldTestSupport", path: "Tests/HeraldTestSupport"),
        // Examples/web is the JavaScript client's example page (HTML and JS, no Swift).
        .target(name: "HeraldExamples", dependencies: ["Herald"], path: "Examples", exclude: ["web"]),
        .testTarget(name: "HeraldTests", dependencies: ["Herald", "HeraldExamples", "HeraldTestSupport", "heraldd"]),
        .testTarget(name: "HeraldCLITests", dependencies: ["HeraldTestSupport", "herald", "heraldd"]),
    ],
    swiftLanguageModes: [.v6]
)
