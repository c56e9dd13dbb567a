"""
A kit or an integration publishing with paho-mqtt (clients.md §1.1, rule 37): client id = the
device token, clean session, keep-alive 120, credentials only when given, and one publish cycle
per connection. Takes one JSON argument and prints one JSON document: the CONNACK code and, for
each message, whether paho handed it to the socket (QoS 0) or had it acknowledged (QoS 1).
"""
import json
import sys
import threading

import paho.mqtt.client as mqtt


def main():
    cmd = json.loads(sys.argv[1])
    connected = threading.Event()
    result = {'connack': None, 'published': [], 'disconnect': None}

    def on_connect(client, userdata, flags, reason_code, properties):
        result['connack'] = reason_code.value
        connected.set()

    def on_disconnect(client, userdata, flags, reason_code, properties):
        result['disconnect'] = reason_code.value

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=cmd['client_id'], clean_session=True, protocol=mqtt.MQTTv311)
    client.on_connect = on_connect
    client.on_disconnect = on_disconnect
    if cmd.get('username') is not None:
        client.username_pw_set(cmd['username'], cmd.get('password'))
    client.connect(cmd['host'], cmd['port'], keepalive=120)
    client.loop_start()
    if not connected.wait(10):
        raise SystemExit('no CONNACK within 10 s')
    if result['connack'] == 0:
        for message in cmd['messages']:
            info = client.publish(message['topic'], message['payload'].encode('utf-8'), qos=message.get('qos', 0), retain=False)
            info.wait_for_publish(10)
            result['published'].append(info.is_published())
    client.disconnect()
    client.loop_stop()
    print(json.dumps(result))


if __name__ == '__main__':
    main()
