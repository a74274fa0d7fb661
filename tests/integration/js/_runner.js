// The frame shared by the kafkajs scripts here (group_client.js, txn_client.js), run by
// tests/integration/_kafkajs.py:
//
//   request        the JSON request of argv[2]; timeoutMs bounds the whole run: after it, a
//                  JSON line {"error": "timed out ..."} and exit code 2 (the watchdog)
//   newKafka(id)   a kafkajs client of request.brokers (logging off, short retries)
//   run(modes)     runs modes[request.mode](), prints its result as ONE JSON line on stdout;
//                  an error prints {"error": "<name>: <message>", "type": ...} and exits 1
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const request = JSON.parse(process.argv[2])
const watchdog = setTimeout(() => {
  process.stdout.write(JSON.stringify({ error: `timed out after ${request.timeoutMs} ms` }) + '\n')
  process.exit(2)
}, request.timeoutMs)

function newKafka(clientId) {
  return new Kafka({
    clientId,
    brokers: request.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5000,
    requestTimeout: 10000,
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 1000 },
  })
}

function run(modes) {
  modes[request.mode]()
    .then(result => {
      clearTimeout(watchdog)
      process.stdout.write(JSON.stringify(result) + '\n')
    })
    .catch(e => {
      clearTimeout(watchdog)
      process.stdout.write(JSON.stringify({ error: `${e.name}: ${e.message}`, type: e.type || null }) + '\n')
      process.exit(1)
    })
}

module.exports = { request, newKafka, run }
