// kafkajs 2.2.4 transactions, driven by tests/integration/test_txn_kafkajs.py.
//
//   node txn_client.js '<json request>'
//
// Request fields: mode, brokers ([host:port]), timeoutMs (whole run; exit code 2 after it).
//   produce: transactionalId, topic, txns: [{values: [hex], end: "commit" | "abort"}]: one
//            transactional producer runs the transactions in order (record i of a transaction
//            goes to partition i % partitions).
//   fence:   transactionalId, topic, zombie: [hex], winner: [hex]: producer A opens a
//            transaction and sends `zombie`; producer B (same transactional id) connects
//            (InitProducerId fences A), sends `winner` and commits; then A tries to commit.
//            Result: {zombieError: {type, name}} (or zombieError null if A's commit worked).
//   ctp:     transactionalId, source, sink, groupId, expect, abortAfter (bool): a group
//            consumer (readUncommitted false) reads `expect` records of `source`; one
//            transaction sends out:reverse(value) of each to `sink` (same partition as the
//            input) plus the group's offsets (sendOffsets) and commits; with abortAfter, a
//            second transaction sends "aborted-output" and offsets 1 and aborts.
//            Result: {positions: {partition: offset}}.
//   consume: topic, readUncommitted (bool), expect: a fresh group reads `expect` records from
//            the beginning. Result: {values: [hex]}.
// Prints ONE JSON line on stdout. Errors: a JSON line {"error": ...} and exit code 1.
'use strict'

const { request, newKafka, run } = require('./_runner')

const kafka = newKafka('kjs-txn')

const PARTITIONS = request.partitions || 2
const fromHex = h => Buffer.from(h, 'hex')

function transactionalProducer() {
  return kafka.producer({
    transactionalId: request.transactionalId,
    maxInFlightRequests: 1,
    idempotent: true,
    transactionTimeout: 60000,
  })
}

const messagesOf = values =>
  values.map((v, i) => ({ key: `k${i}`, value: fromHex(v), partition: i % PARTITIONS }))

async function produce() {
  const producer = transactionalProducer()
  await producer.connect()
  try {
    for (const { values, end } of request.txns) {
      const txn = await producer.transaction()
      await txn.send({ topic: request.topic, messages: messagesOf(values) })
      if (end === 'commit') await txn.commit()
      else await txn.abort()
    }
  } finally {
    await producer.disconnect()
  }
  return {}
}

async function fence() {
  const zombie = transactionalProducer()
  const winner = transactionalProducer()
  await zombie.connect()
  try {
    const zombieTxn = await zombie.transaction()
    await zombieTxn.send({ topic: request.topic, messages: messagesOf(request.zombie) })
    await winner.connect()
    const winnerTxn = await winner.transaction()
    await winnerTxn.send({ topic: request.topic, messages: messagesOf(request.winner) })
    await winnerTxn.commit()
    try {
      await zombieTxn.commit()
      return { zombieError: null }
    } catch (e) {
      return { zombieError: { type: e.type || null, name: e.name } }
    }
  } finally {
    await winner.disconnect()
    await zombie.disconnect().catch(() => {})
  }
}

async function readRecords(consumer, topic, expect) {
  const records = []
  let reached
  const done = new Promise(resolve => {
    reached = resolve
  })
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      records.push({ partition, offset: Number(message.offset), value: message.value })
      if (records.length >= expect) reached()
    },
  })
  await done
  await consumer.stop()
  return records
}

async function ctp() {
  const consumer = kafka.consumer({
    groupId: request.groupId,
    readUncommitted: false,
    sessionTimeout: 6000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 100,
  })
  const producer = transactionalProducer()
  await consumer.connect()
  await producer.connect()
  try {
    const records = await readRecords(consumer, request.source, request.expect)
    const positions = {}
    for (const { partition, offset } of records)
      positions[partition] = Math.max(positions[partition] ?? 0, offset + 1)
    const offsetsOf = pick => ({
      consumerGroupId: request.groupId,
      topics: [
        {
          topic: request.source,
          partitions: Object.keys(positions).map(p => ({ partition: Number(p), offset: String(pick(p)) })),
        },
      ],
    })
    const txn = await producer.transaction()
    await txn.send({
      topic: request.sink,
      messages: records.map(({ partition, value }) => ({
        partition,
        value: Buffer.concat([Buffer.from('out:'), Buffer.from(value).reverse()]),
      })),
    })
    await txn.sendOffsets(offsetsOf(p => positions[p]))
    await txn.commit()
    if (request.abortAfter) {
      const aborted = await producer.transaction()
      await aborted.send({ topic: request.sink, messages: [{ partition: 0, value: 'aborted-output' }] })
      await aborted.sendOffsets(offsetsOf(() => 1))
      await aborted.abort()
    }
    return { positions }
  } finally {
    await producer.disconnect()
    await consumer.disconnect()
  }
}

async function consume() {
  const consumer = kafka.consumer({
    groupId: `kjs-read-${process.pid}-${Date.now()}`,
    readUncommitted: request.readUncommitted,
    maxWaitTimeInMs: 100,
  })
  await consumer.connect()
  try {
    const records = await readRecords(consumer, request.topic, request.expect)
    return { values: records.map(r => r.value.toString('hex')) }
  } finally {
    await consumer.disconnect()
  }
}

run({ produce, fence, ctp, consume })
