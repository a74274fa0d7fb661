// kafkajs 2.2.4 as a consumer-group client, driven by tests/integration/test_groups_kafkajs.py.
//
//   node group_client.js '<json request>'
//
// Request fields: mode ("consume" | "admin"), brokers ([host:port]), topic, groupId,
// timeoutMs (whole run; exit code 2 after it).
//   consume: expect (records to read), commit ("positions": the offset after the last record
//            of each partition read, or [{partition, offset, metadata}]): subscribes
//            (fromBeginning), reads exactly `expect` records with autoCommit off, commits,
//            disconnects (LeaveGroup).
//   admin:   reads listGroups, describeGroups([groupId]), fetchOffsets, then deleteGroups twice
//            when `delete` is true (the second one must fail: GROUP_ID_NOT_FOUND).
// Prints ONE JSON line on stdout: the result (records as [partition, offset, keyHex|null,
// valueHex|null], offsets as numbers). Errors: a JSON line {"error": ...} and exit code 1.
'use strict'

const { request, newKafka, run } = require('./_runner')

const kafka = newKafka(`kjs-${request.groupId}`)

const hex = buf => (buf === null || buf === undefined ? null : buf.toString('hex'))

async function consume() {
  const consumer = kafka.consumer({
    groupId: request.groupId,
    sessionTimeout: 6000,
    heartbeatInterval: 500,
    rebalanceTimeout: 10000,
    maxWaitTimeInMs: 100,
  })
  const records = []
  let reached
  const done = new Promise(resolve => {
    reached = resolve
  })
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [request.topic], fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        records.push([partition, Number(message.offset), hex(message.key), hex(message.value)])
        if (records.length >= request.expect) reached()
      },
    })
    await done
    let commits
    if (request.commit === 'positions') {
      const last = {}
      for (const [partition, offset] of records) last[partition] = Math.max(last[partition] ?? -1, offset)
      commits = Object.entries(last).map(([partition, offset]) => ({
        topic: request.topic,
        partition: Number(partition),
        offset: String(offset + 1),
      }))
    } else {
      commits = request.commit.map(({ partition, offset, metadata }) => ({
        topic: request.topic,
        partition,
        offset: String(offset),
        metadata: metadata ?? null,
      }))
    }
    await consumer.commitOffsets(commits)
  } finally {
    await consumer.disconnect()
  }
  return { records }
}

async function admin() {
  const client = kafka.admin()
  await client.connect()
  try {
    const listed = await client.listGroups()
    const described = await client.describeGroups([request.groupId])
    const fetched = await client.fetchOffsets({ groupId: request.groupId, topics: [request.topic] })
    const result = {
      groups: listed.groups,
      described: described.groups.map(g => ({
        groupId: g.groupId,
        state: g.state,
        protocolType: g.protocolType,
        protocol: g.protocol,
        members: g.members.length,
        errorCode: g.errorCode,
      })),
      offsets: fetched.flatMap(({ topic, partitions }) =>
        partitions.map(({ partition, offset, metadata }) => [topic, partition, Number(offset), metadata])
      ),
    }
    if (request.delete) {
      result.deleted = await client.deleteGroups([request.groupId])
      try {
        await client.deleteGroups([request.groupId])
        result.deletedAgain = 'no error'
      } catch (e) {
        result.deletedAgain = (e.groups || []).map(g => ({
          groupId: g.groupId,
          errorCode: g.errorCode,
          type: g.error && g.error.type,
        }))
      }
    }
    return result
  } finally {
    await client.disconnect()
  }
}

run({ consume, admin })
