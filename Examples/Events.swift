import Herald

// Event types the examples share (the tests have their own copies in Fixtures.swift, which
// take precedence there; the JSON is the same).

/// A chat line on `chat.lobby`.
struct ChatLine: HeraldEvent, Equatable {
    static let channel = Channel("chat", "lobby")
    var text: String
    var n: Int
}

/// A car's move; its home channel is the pattern over every car's instance channel.
struct CarMoved: HeraldEvent, Equatable {
    static let channel = Channel("car", .one, "moved")
    var x: Int
}

/// Instance channels of cars, built from typed parts.
enum Car {
    static func moved(id: Int) -> Topic<CarMoved> { Topic("car", id, "moved") }
}
