// kafkajs 2.2.4 over TLS and SASL, driven by tests/integration/test_security_kafkajs.py.
//
//   node security_client.js '<json request>'
//
// Request fields: brokers ([host:port]), timeoutMs, topic, values ([string]), ca (path of a
// PEM CA file: TLS; absent: no TLS), sasl ({mechanism: "plain" | "scram-sha-256" |
// "scram-sha-512", username, password}; absent: no SASL).
// Mode produce_consume: a producer sends `values` to partition 0 of `topic`, then a fresh
// group consumer reads as many from the beginning. Result: {values: [string]}.
'use strict'

const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')
const { request, run } = require('./_runner')

const kafka = new Kafka({
  clientId: 'kjs-security',
  brokers: request.brokers,
  logLevel: logLevel.NOTHING,
  connectionTimeout: 5000,
  requestTimeout: 10000,
  retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 },
  ssl: request.ca ? { ca: [fs.readFileSync(request.ca, 'utf-8')] } : undefined,
  sasl: request.sasl || undefined,
})

async function produceConsume() {
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({
    topic: request.topic,
    messages: request.values.map(value => ({ value, partition: 0 })),
  })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: `kjs-sec-${Date.now()}` })
  const got = []
  await consumer.connect()
  await consumer.subscribe({ topic: request.topic, fromBeginning: true })
  await new Promise((resolve, reject) => {
    consumer
      .run({
        eachMessage: async ({ message }) => {
          got.push(message.value.toString())
          if (got.length >= request.values.length) resolve()
        },
      })
      .catch(reject)
  })
  await consumer.disconnect()
  return { values: got }
}

run({ produce_consume: produceConsume })
