// swift-tools-version:6.0
import PackageDescription

/// Herald: a pub/sub daemon for app events. See docs/architecture.md for the module map.
let package = Package(
    name: "Herald",
    products: [
        .executable(name: "heraldd", targets: ["heraldd"]),
        .executable(name: "herald-bench", targets: ["herald-bench"]),
        .library(name: "HeraldWire", targets: ["HeraldWire"]),
        .library(name: "HeraldBroker", targets: ["HeraldBroker"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        .target(
            name: "HeraldWire",
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"])]
        ),
        .target(
            name: "HeraldBroker",
            dependencies: ["HeraldWire"],
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"])]
        ),
        .target(
            name: "HeraldServer",
            dependencies: ["CLibUV", "HeraldWire", "HeraldBroker"]
        ),
        .executableTarget(
            name: "heraldd",
            dependencies: ["HeraldServer"]
        ),
        .executableTarget(
            name: "herald-bench",
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"])]
        ),
        .testTarget(name: "HeraldWireTests", dependencies: ["HeraldWire"]),
        .testTarget(name: "HeraldBrokerTests", dependencies: ["HeraldBroker", "HeraldWire"]),
        .testTarget(name: "HeraldServerTests", dependencies: ["HeraldServer", "HeraldWire", "heraldd"]),
    ],
    swiftLanguageModes: [.v6]
)
