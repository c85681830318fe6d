import Testing
@testable import HeraldBroker

/// The delivering node's record of who may reply stays bounded even when the requests it
/// holds were answered long ago on their own node (it does not hear of that).
@Suite struct DeliveredRequestsTests {
    @Test func pastCapacityTheOldestDeliveryIsForgottenFirst() {
        var delivered = DeliveredRequests()
        var counter: UInt64 = 0
        func token() -> ReplyToken { ReplyToken(node: 1) { counter += 1; return counter } }
        let first = token()
        #expect(delivered.add(first, recipients: [1], channel: [97]).evicted == nil)
        for _ in 1..<DeliveredRequests.capacity { _ = delivered.add(token(), recipients: [1], channel: [97]) }
        #expect(delivered.count == DeliveredRequests.capacity)
        let pushed = delivered.add(token(), recipients: [2], channel: [97])
        #expect(pushed.isNew && pushed.evicted == 1, "the first entry's id")
        #expect(delivered.entry(for: first) == nil && delivered.count == DeliveredRequests.capacity)
        delivered.remove(id: 2)
        #expect(delivered.add(token(), recipients: [3], channel: [97]).evicted == nil, "room again after an expiry")
        #expect(delivered.add(token(), recipients: [3], channel: [97]).evicted == 3, "id 2 already gone: the next oldest")
    }
}
