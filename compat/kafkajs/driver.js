// kafkajs driver for wirebroker's compatibility matrix.
//
// Protocol: one JSON object per line on stdin, {"id": n, "op": "...", "args": {...}}; one
// JSON line per answer on stdout, {"id": n, "ok": result} or {"id": n, "error": {"code",
// "message"}}. Requests run concurrently (each is an async function); answers carry the id.
// Bytes travel as base64 strings, null stays null. kafkajs logs go to stderr (stdout is the
// protocol channel). The driver uses kafkajs as an application would: Producer.send,
// Consumer.subscribe/run/seek, the Admin client, GROUP_JOIN events for the assignment.
//
// Codecs: gzip is built in; snappy is kafkajs-snappy (pure JS). lz4 is a small kafkajs codec
// over lz4js (pure JS): kafkajs-lz4 depends on the native `lz4` package, whose tarball ships
// macOS binaries and needs node-gyp (and Node headers from the internet) to build. The codec
// writes its own LZ4 frame (lz4Frame below) from lz4js's block compressor: lz4js's
// compress() flags its frames "dependent blocks", which Apache Kafka refuses (its LZ4 reader:
// "Dependent block stream is unsupported", answered UNKNOWN_SERVER_ERROR), while the `lz4`
// package under kafkajs-lz4 writes independent blocks. kafkajs has no zstd codec that installs
// without a native build (@kafkajs/zstd needs cppzst), so zstd is not offered.
'use strict'

const readline = require('readline')
const {
  Kafka,
  CompressionTypes,
  CompressionCodecs,
  ConfigResourceTypes,
  AssignerProtocol,
  logLevel,
} = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const lz4js = require('lz4js')
const xxh32 = require('lz4js/xxh32.js')

// An LZ4 frame as Kafka's producer writes one: descriptor "version 01, independent blocks"
// with 64 KiB blocks and its checksum, each block compressed on its own (a fresh hash table)
// or stored raw when that is not smaller, then the end mark. No content size or checksums.
const LZ4_BLOCK = 64 * 1024
function lz4Frame(src) {
  const header = Buffer.from([0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0])
  header[6] = (xxh32.hash(0, header, 4, 2) >> 8) & 0xff
  const parts = [header]
  const out = Buffer.alloc(LZ4_BLOCK + (LZ4_BLOCK >> 7) + 64)
  for (let start = 0; start < src.length; start += LZ4_BLOCK) {
    const block = src.subarray(start, Math.min(start + LZ4_BLOCK, src.length))
    const size = lz4js.compressBlock(block, out, 0, block.length, new Uint32Array(1 << 16))
    const raw = size === 0 || size >= block.length
    const length = Buffer.alloc(4)
    length.writeUInt32LE(raw ? (0x80000000 | block.length) >>> 0 : size)
    parts.push(length, Buffer.from(raw ? block : out.subarray(0, size)))
  }
  parts.push(Buffer.alloc(4))
  return Buffer.concat(parts)
}

const LZ4Codec = () => ({
  async compress(encoder) { return lz4Frame(encoder.buffer) },
  async decompress(buffer) { return Buffer.from(lz4js.decompress(buffer)) },
})

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
CompressionCodecs[CompressionTypes.LZ4] = LZ4Codec

const CODECS = {
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
}

const logCreator = () => ({ level, log }) => {
  if (level <= logLevel.WARN) {
    process.stderr.write(`[kafkajs ${log.logger || ''}] ${log.message} ${JSON.stringify(log)}\n`)
  }
}

const clients = new Map()
function kafka(bootstrap, clientId = 'compat-kafkajs') {
  const key = `${bootstrap}|${clientId}`
  if (!clients.has(key)) {
    clients.set(key, new Kafka({
      clientId,
      brokers: bootstrap.split(','),
      logLevel: logLevel.WARN,
      logCreator,
      connectionTimeout: 10000,
      requestTimeout: 15000,
      retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2000 },
    }))
  }
  return clients.get(key)
}

const b64 = (buf) => (buf === null || buf === undefined ? null : Buffer.from(buf).toString('base64'))
const unb64 = (s) => (s === null || s === undefined ? null : Buffer.from(s, 'base64'))

function headersIn(list) {
  const out = {}
  for (const [k, v] of list) {
    const value = unb64(v)
    if (k in out) out[k] = [].concat(out[k], [value])
    else out[k] = value
  }
  return out
}

function headersOut(obj) {
  const out = []
  for (const [k, v] of Object.entries(obj || {})) {
    for (const one of Array.isArray(v) ? v : [v]) out.push([k, b64(one)])
  }
  return out
}

function recordOut(partition, m) {
  return {
    partition,
    offset: Number(m.offset),
    timestamp: Number(m.timestamp),
    key: b64(m.key),
    value: b64(m.value),
    headers: headersOut(m.headers),
  }
}

// -- producers -------------------------------------------------------------------------------
const producers = new Map()
async function producer(bootstrap, idempotent) {
  const key = `${bootstrap}|${idempotent}`
  if (!producers.has(key)) {
    const p = kafka(bootstrap).producer(
      idempotent ? { idempotent: true, maxInFlightRequests: 1 } : { allowAutoTopicCreation: true })
    await p.connect()
    producers.set(key, p)
  }
  return producers.get(key)
}

async function produce({ bootstrap, topic, records, compression, idempotent, timeoutMs }) {
  const p = await producer(bootstrap, Boolean(idempotent))
  const messages = records.map((r) => {
    const m = { key: unb64(r.key), value: unb64(r.value), headers: headersIn(r.headers) }
    if (r.partition !== null) m.partition = r.partition
    if (r.timestamp !== null) m.timestamp = String(r.timestamp)
    return m
  })
  const meta = await p.send({
    topic,
    messages,
    acks: -1,
    timeout: timeoutMs,
    compression: compression ? CODECS[compression] : CompressionTypes.None,
  })
  // One batch per partition per send(): message i of partition p is at baseOffset(p) + i.
  const base = new Map(meta.map((m) => [m.partition, Number(m.baseOffset)]))
  const seen = new Map()
  if (records.some((r) => r.partition === null)) return null
  return records.map((r) => {
    const i = seen.get(r.partition) || 0
    seen.set(r.partition, i + 1)
    return { partition: r.partition, offset: base.get(r.partition) + i }
  })
}

// One transactional producer runs the transactions in order (commit or abort each).
async function transactionalProduce({ bootstrap, topic, transactions, transactionalId }) {
  const p = kafka(bootstrap).producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })
  await p.connect()
  try {
    for (const { records, commit } of transactions) {
      const txn = await p.transaction()
      const messages = records.map((r) => {
        const m = { key: unb64(r.key), value: unb64(r.value) }
        if (r.partition !== null) m.partition = r.partition
        return m
      })
      await txn.send({ topic, messages })
      if (commit) await txn.commit()
      else await txn.abort()
    }
  } finally {
    await p.disconnect()
  }
  return true
}

// -- consumers -------------------------------------------------------------------------------
let readers = 0
async function consume({ bootstrap, topic, partition, start, count, timeoutMs, readCommitted }) {
  // kafkajs has no assign(): a throwaway group (no commits) reads the topic, seeked to start.
  const consumer = kafka(bootstrap).consumer({
    groupId: `compat-kafkajs-read-${process.pid}-${++readers}`,
    maxWaitTimeInMs: 100,
    readUncommitted: !readCommitted,
  })
  const out = []
  // kafkajs restarts a consumer whose group join failed with a retriable error (such as
  // COORDINATOR_LOAD_IN_PROGRESS while a new __consumer_offsets partition is loading, as on
  // Kafka): meanwhile seek() throws "Consumer group was not initialized", and afterwards the
  // records are delivered again from the beginning. So seek is retried until the group is
  // back, and only offsets past the last one taken are kept.
  let next = start
  const deadline = Date.now() + timeoutMs
  try {
    await consumer.connect()
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    let done
    const finished = new Promise((resolve) => { done = resolve })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition: p, message }) => {
        const offset = Number(message.offset)
        if (p !== partition || offset < next || out.length >= count) return
        out.push(recordOut(p, message))
        next = offset + 1
        if (out.length >= count) done()
      },
    })
    for (;;) {
      try {
        consumer.seek({ topic, partition, offset: String(start) })
        break
      } catch (e) {
        if (!/not initialized/.test(String(e)) || Date.now() > deadline) throw e
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    if (count > 0) {
      const left = Math.max(0, deadline - Date.now())
      await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, left))])
    }
  } finally {
    await consumer.disconnect()
  }
  return out
}

// -- group members ---------------------------------------------------------------------------
const members = new Map()
let memberSeq = 0
async function memberStart({ bootstrap, group, topics, clientId }) {
  const consumer = kafka(bootstrap, clientId).consumer({
    groupId: group,
    sessionTimeout: 10000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 100,
  })
  const state = { consumer, buffer: [], assignment: [], waiters: [], error: null }
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    const a = e.payload.memberAssignment || {}
    state.assignment = Object.entries(a).flatMap(([t, ps]) => ps.map((p) => [t, p]))
  })
  consumer.on(consumer.events.CRASH, (e) => { state.error = String(e.payload.error) })
  await consumer.connect()
  await consumer.subscribe({ topics, fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch, heartbeat }) => {
      if (batch.messages.length === 0) return
      const last = batch.messages[batch.messages.length - 1]
      await consumer.commitOffsets([
        { topic: batch.topic, partition: batch.partition, offset: String(Number(last.offset) + 1) },
      ])
      for (const m of batch.messages) state.buffer.push(recordOut(batch.partition, m))
      state.waiters.splice(0).forEach((w) => w())
      await heartbeat()
    },
  })
  const id = ++memberSeq
  members.set(id, state)
  return id
}

async function memberPoll({ member, timeoutMs }) {
  const state = members.get(member)
  if (state.error) throw new Error(`consumer crashed: ${state.error}`)
  if (state.buffer.length === 0) {
    await new Promise((resolve) => {
      state.waiters.push(resolve)
      setTimeout(resolve, timeoutMs)
    })
  }
  return { records: state.buffer.splice(0), assignment: state.assignment }
}

async function memberClose({ member }) {
  const state = members.get(member)
  members.delete(member)
  await state.consumer.disconnect()
  return true
}

// -- admin -----------------------------------------------------------------------------------
const admins = new Map()
async function admin(bootstrap) {
  if (!admins.has(bootstrap)) {
    const a = kafka(bootstrap).admin()
    await a.connect()
    admins.set(bootstrap, a)
  }
  return admins.get(bootstrap)
}

const ops = {
  produce,
  transactionalProduce,
  consume,
  memberStart,
  memberPoll,
  memberClose,
  async listTopics({ bootstrap }) {
    const meta = await (await admin(bootstrap)).fetchTopicMetadata()
    return Object.fromEntries(meta.topics.map((t) => [t.name, t.partitions.length]))
  },
  async createTopic({ bootstrap, name, partitions, replicationFactor, configs }) {
    const created = await (await admin(bootstrap)).createTopics({
      waitForLeaders: true,
      topics: [{
        topic: name,
        numPartitions: partitions,
        replicationFactor: replicationFactor || 1,
        configEntries: Object.entries(configs).map(([k, v]) => ({ name: k, value: v })),
      }],
    })
    if (!created) throw Object.assign(new Error('topic exists'), { type: 'TOPIC_ALREADY_EXISTS' })
    return true
  },
  async createPartitions({ bootstrap, name, total }) {
    await (await admin(bootstrap)).createPartitions({ topicPartitions: [{ topic: name, count: total }] })
    return true
  },
  async describeConfigs({ bootstrap, name }) {
    const res = await (await admin(bootstrap)).describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name }],
    })
    return Object.fromEntries(res.resources[0].configEntries.map((c) => [c.configName, c.configValue]))
  },
  async alterConfigs({ bootstrap, name, configs }) {
    await (await admin(bootstrap)).alterConfigs({
      validateOnly: false,
      resources: [{
        type: ConfigResourceTypes.TOPIC,
        name,
        configEntries: Object.entries(configs).map(([k, v]) => ({ name: k, value: v })),
      }],
    })
    return true
  },
  async deleteTopic({ bootstrap, name }) {
    await (await admin(bootstrap)).deleteTopics({ topics: [name], timeout: 10000 })
    return true
  },
  async listGroups({ bootstrap }) {
    const res = await (await admin(bootstrap)).listGroups()
    return res.groups.map((g) => g.groupId)
  },
  async describeGroup({ bootstrap, group }) {
    const res = await (await admin(bootstrap)).describeGroups([group])
    const g = res.groups[0]
    return {
      state: g.state,
      protocolType: g.protocolType,
      members: g.members.map((m) => {
        const decoded = m.memberAssignment && m.memberAssignment.length
          ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment)
          : { assignment: {} }
        const tps = Object.entries(decoded.assignment).flatMap(([t, ps]) => ps.map((p) => [t, p]))
        return { memberId: m.memberId, clientId: m.clientId, assignment: tps }
      }),
    }
  },
  async deleteGroup({ bootstrap, group }) {
    await (await admin(bootstrap)).deleteGroups([group])
    return true
  },
  async offsetForTime({ bootstrap, topic, partition, timestamp }) {
    // kafkajs answers "no record at or after the timestamp" (Kafka's -1) with the high
    // watermark, so the high watermark is returned too and the adapter maps it back to none.
    const a = await admin(bootstrap)
    const res = await a.fetchTopicOffsetsByTimestamp(topic, timestamp)
    const high = (await a.fetchTopicOffsets(topic)).find((r) => r.partition === partition).high
    const hit = res.find((r) => r.partition === partition)
    return { offset: Number(hit.offset), high: Number(high) }
  },
  async deleteRecords({ bootstrap, topic, partition, before }) {
    const a = await admin(bootstrap)
    // deleteTopicRecords looks the leader up in the admin's metadata cache before loading the
    // topic's metadata; fetchTopicOffsets loads it first (see compat/kafkajs/FINDINGS.md).
    await a.fetchTopicOffsets(topic)
    await a.deleteTopicRecords({ topic, partitions: [{ partition, offset: String(before) }] })
    const offsets = await a.fetchTopicOffsets(topic)
    return Number(offsets.find((o) => o.partition === partition).low)
  },
  async close() {
    for (const p of producers.values()) await p.disconnect()
    for (const a of admins.values()) await a.disconnect()
    for (const m of members.values()) await m.consumer.disconnect()
    producers.clear()
    admins.clear()
    members.clear()
    return true
  },
}

function errorOut(err) {
  const inner = err.originalError || (err.cause instanceof Error ? err.cause : null) || err
  const code = inner.type || err.type || err.name || 'Error'
  const parts = (err.partitions || []).map((p) => `p${p.partition}: ${p.error && p.error.message}`)
  const detail = inner !== err ? ` (${inner.message})` : ''
  return { code, message: `${err.name}: ${err.message}${detail} ${parts.join('; ')}`.trim() }
}

const rl = readline.createInterface({ input: process.stdin })
rl.on('line', (line) => {
  let req
  try {
    req = JSON.parse(line)
  } catch (e) {
    process.stderr.write(`bad request line: ${line}\n`)
    return
  }
  const op = ops[req.op]
  Promise.resolve()
    .then(() => {
      if (!op) throw new Error(`unknown op ${req.op}`)
      return op(req.args || {})
    })
    .then(
      (ok) => process.stdout.write(JSON.stringify({ id: req.id, ok }) + '\n'),
      (err) => process.stdout.write(JSON.stringify({ id: req.id, error: errorOut(err) }) + '\n'),
    )
})
rl.on('close', () => {
  ops.close().finally(() => process.exit(0))
})
