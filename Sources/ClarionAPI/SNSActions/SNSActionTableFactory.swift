/// Every SNS action Clarion serves, on the store's repositories and the publish batcher.
///
///     let table = makeSNSActionTable(context: SNSActionContext(pool: pool, masterKey: key, batcher: batcher,
///                                                              region: "us-east-1"))
///     SNSQueryService(region: "us-east-1", actions: table, authentication: .sigV4(verifier)).register(on: &router)
public func makeSNSActionTable(context: SNSActionContext) -> SNSActionTable {
    var table = SNSActionTable()
    PlatformApplicationActions.register(&table, context)
    EndpointActions.register(&table, context)
    TopicActions.register(&table, context)
    SubscriptionActions.register(&table, context)
    PublishActions.register(&table, context)
    TagActions.register(&table, context)
    return table
}
