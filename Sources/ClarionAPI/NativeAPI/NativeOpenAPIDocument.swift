// Generated from docs/openapi.json, the one source of truth: edit that file, then regenerate this one with
//   python3 -c 'f="Sources/ClarionAPI/NativeAPI/NativeOpenAPIDocument.swift"; d=open("docs/openapi.json").read(); s=open(f).read(); open(f,"w").write(s.split("enum NativeOpenAPIDocument {\n")[0] + "enum NativeOpenAPIDocument {\n    static let text = #\"\"\"\n" + d + "\n\"\"\"#\n\n    static let bytes = Array(text.utf8)\n}\n")'
// NativeOpenAPITests fails when the two differ, and when a registered /v1 route is missing from the document or
// the document has an operation no route serves.
enum NativeOpenAPIDocument {
    static let text = #"""
{
  "openapi": "3.0.3",
  "info": {
    "title": "Clarion native API",
    "version": "1",
    "description": "JSON API of the Clarion push gateway. The same resources as its SNS-compatible Query API at `/` (ids and SNS ARNs are interchangeable), plus publishing to a user id and message status. Authenticate with `Authorization: Bearer <API key>` (`clarion accounts`). Errors are `{\"error\": {\"code\", \"message\", \"field\"}}`."
  },
  "servers": [
    {
      "url": "/"
    }
  ],
  "security": [
    {
      "bearerAuth": []
    }
  ],
  "paths": {
    "/v1/openapi.json": {
      "get": {
        "operationId": "getOpenAPIDocument",
        "summary": "This document.",
        "responses": {
          "200": {
            "description": "The OpenAPI 3 document.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        },
        "security": []
      }
    },
    "/v1/applications": {
      "post": {
        "operationId": "createApplication",
        "summary": "Create a platform application (or update the one with this platform and name).",
        "description": "Like SNS's CreatePlatformApplication: creating an existing platform+name again answers the same application with its attributes merged.",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/ApplicationCreate"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "Created.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Application"
                }
              }
            }
          },
          "200": {
            "description": "It existed: attributes merged, given credentials replaced.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Application"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "413": {
            "$ref": "#/components/responses/PayloadTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      },
      "get": {
        "operationId": "listApplications",
        "summary": "List platform applications, oldest first.",
        "parameters": [
          {
            "$ref": "#/components/parameters/limit"
          },
          {
            "$ref": "#/components/parameters/cursor"
          }
        ],
        "responses": {
          "200": {
            "description": "A page.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ApplicationList"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/applications/{id}": {
      "get": {
        "operationId": "getApplication",
        "summary": "Get a platform application.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A platform application id (`<PLATFORM>:<name>`, e.g. `APNS:chat`) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The application.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Application"
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      },
      "patch": {
        "operationId": "updateApplication",
        "summary": "Merge attributes, replace credentials, enable or disable.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A platform application id (`<PLATFORM>:<name>`, e.g. `APNS:chat`) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/ApplicationPatch"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "Updated.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Application"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "413": {
            "$ref": "#/components/responses/PayloadTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      },
      "delete": {
        "operationId": "deleteApplication",
        "summary": "Delete a platform application with its endpoints and their subscriptions.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A platform application id (`<PLATFORM>:<name>`, e.g. `APNS:chat`) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "204": {
            "description": "Deleted, or there was nothing to delete (deletes are idempotent)."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/applications/{id}/endpoints": {
      "post": {
        "operationId": "createEndpoint",
        "summary": "Register a device token (idempotent).",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A platform application id (`<PLATFORM>:<name>`, e.g. `APNS:chat`) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/EndpointCreate"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "Created.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Endpoint"
                }
              }
            }
          },
          "200": {
            "description": "The application has this token with the same enabled, custom_user_data and user_id (those given): the existing endpoint, not re-enabled; device facts given are updated.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Endpoint"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "409": {
            "description": "The token exists with different attributes (SNS: \"already exists with the same Token, but different attributes\"); `field` is `token` and the message names the existing endpoint.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "413": {
            "$ref": "#/components/responses/PayloadTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      },
      "get": {
        "operationId": "listEndpoints",
        "summary": "List an application's endpoints in creation order.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A platform application id (`<PLATFORM>:<name>`, e.g. `APNS:chat`) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          },
          {
            "$ref": "#/components/parameters/limit"
          },
          {
            "$ref": "#/components/parameters/cursor"
          }
        ],
        "responses": {
          "200": {
            "description": "A page.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/EndpointList"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/endpoints/{id}": {
      "get": {
        "operationId": "getEndpoint",
        "summary": "Get an endpoint.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "An endpoint id (UUID) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The endpoint.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Endpoint"
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      },
      "patch": {
        "operationId": "updateEndpoint",
        "summary": "Change the token, enable or disable, set or clear custom data and user id, device facts.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "An endpoint id (UUID) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/EndpointPatch"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "Updated.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Endpoint"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "409": {
            "description": "Another endpoint of the application has this token (`field`: `token`).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "413": {
            "$ref": "#/components/responses/PayloadTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      },
      "delete": {
        "operationId": "deleteEndpoint",
        "summary": "Delete an endpoint and its subscriptions.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "An endpoint id (UUID) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "204": {
            "description": "Deleted, or there was nothing to delete (deletes are idempotent)."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/topics": {
      "post": {
        "operationId": "createTopic",
        "summary": "Create a topic (idempotent by name).",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/TopicCreate"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "Created.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Topic"
                }
              }
            }
          },
          "200": {
            "description": "It existed with the same attributes.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Topic"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "409": {
            "description": "The topic exists with different attributes (`field`: `attributes`).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "413": {
            "$ref": "#/components/responses/PayloadTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      },
      "get": {
        "operationId": "listTopics",
        "summary": "List topics, oldest first.",
        "parameters": [
          {
            "$ref": "#/components/parameters/limit"
          },
          {
            "$ref": "#/components/parameters/cursor"
          }
        ],
        "responses": {
          "200": {
            "description": "A page.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/TopicList"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/topics/{id}": {
      "get": {
        "operationId": "getTopic",
        "summary": "Get a topic.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A topic id (its name) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The topic.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Topic"
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      },
      "delete": {
        "operationId": "deleteTopic",
        "summary": "Delete a topic and its subscriptions.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A topic id (its name) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "204": {
            "description": "Deleted, or there was nothing to delete (deletes are idempotent)."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/topics/{id}/subscriptions": {
      "post": {
        "operationId": "subscribe",
        "summary": "Subscribe an endpoint to the topic (idempotent).",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A topic id (its name) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/SubscriptionCreate"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "Created.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Subscription"
                }
              }
            }
          },
          "200": {
            "description": "The endpoint was already subscribed.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Subscription"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "413": {
            "$ref": "#/components/responses/PayloadTooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      },
      "get": {
        "operationId": "listSubscriptions",
        "summary": "List a topic's subscriptions in creation order.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A topic id (its name) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          },
          {
            "$ref": "#/components/parameters/limit"
          },
          {
            "$ref": "#/components/parameters/cursor"
          }
        ],
        "responses": {
          "200": {
            "description": "A page.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/SubscriptionList"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/subscriptions/{id}": {
      "get": {
        "operationId": "getSubscription",
        "summary": "Get a subscription.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A subscription id (UUID) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The subscription.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Subscription"
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      },
      "delete": {
        "operationId": "unsubscribe",
        "summary": "Delete a subscription.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A subscription id (UUID) or its SNS ARN, percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "204": {
            "description": "Deleted, or there was nothing to delete (deletes are idempotent)."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/publish": {
      "post": {
        "operationId": "publish",
        "summary": "Publish a message to endpoints, topics and users.",
        "description": "The whole request is validated before anything is stored, with SNS's rules for message maps and reserved attributes. Each endpoint, topic, and each enabled device of a user becomes one stored message.",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/PublishRequest"
              }
            }
          }
        },
        "responses": {
          "202": {
            "description": "Stored durably: every message listed under `messages` will be delivered even if the server stops now.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/PublishAccepted"
                }
              }
            }
          },
          "400": {
            "description": "Invalid input; `field` names it (`targets[0].endpoint`, `message.default`, `attributes.AWS.SNS.MOBILE.APNS.PRIORITY`). Codes: `missing_field`, `invalid_field`, `invalid_json`, `endpoint_disabled`, `application_disabled`.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "A target does not exist; `field` names it (`targets[1].topic`).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "503": {
            "description": "Too many publishes are waiting for a commit, or the store is unavailable; retry (Retry-After).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "413": {
            "description": "The body is over 262,144 bytes (SNS's message limit).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedMediaType"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          }
        }
      }
    },
    "/v1/messages/{id}": {
      "get": {
        "operationId": "getMessage",
        "summary": "The state and delivery counters of a published message.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A message id (UUID) as returned by `POST /v1/publish`.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The message.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/MessageStatus"
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "500": {
            "$ref": "#/components/responses/InternalError"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key of the account."
      }
    },
    "parameters": {
      "limit": {
        "name": "limit",
        "in": "query",
        "required": false,
        "description": "Page size, 1-100 (default 100).",
        "schema": {
          "type": "integer",
          "minimum": 1,
          "maximum": 100,
          "default": 100
        }
      },
      "cursor": {
        "name": "cursor",
        "in": "query",
        "required": false,
        "description": "`next_cursor` of the previous page (opaque).",
        "schema": {
          "type": "string"
        }
      }
    },
    "responses": {
      "BadRequest": {
        "description": "Invalid input; `field` names it.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unauthorized": {
        "description": "No `Authorization: Bearer` header (`unauthorized`) or an unknown or revoked key (`invalid_api_key`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "NotFound": {
        "description": "No such resource in this account (`field`: `id`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Conflict": {
        "description": "Conflicts with an existing resource.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "PayloadTooLarge": {
        "description": "The body is over 1 MiB.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "UnsupportedMediaType": {
        "description": "Content-Type is not application/json.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "InternalError": {
        "description": "The server failed.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unavailable": {
        "description": "The store is unavailable or the server is shutting down; retry.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      }
    },
    "schemas": {
      "Error": {
        "type": "object",
        "required": [
          "error"
        ],
        "properties": {
          "error": {
            "type": "object",
            "required": [
              "code",
              "message",
              "field"
            ],
            "properties": {
              "code": {
                "type": "string",
                "description": "A stable snake_case code: unauthorized, invalid_api_key, missing_field, invalid_field, invalid_json, invalid_query, unsupported_media_type, not_found, conflict, endpoint_disabled, application_disabled, method_not_allowed, payload_too_large, internal_error, service_unavailable."
              },
              "message": {
                "type": "string",
                "description": "For people."
              },
              "field": {
                "type": "string",
                "description": "The offending input as a path into the body (`targets[0].endpoint`) or a parameter name (`id`, `cursor`); null when the error is not about one field.",
                "nullable": true
              }
            },
            "additionalProperties": false
          }
        },
        "additionalProperties": false
      },
      "Application": {
        "type": "object",
        "required": [
          "id",
          "arn",
          "name",
          "platform",
          "enabled",
          "disabled_reason",
          "disabled_at",
          "attributes",
          "created_at",
          "updated_at"
        ],
        "properties": {
          "id": {
            "type": "string",
            "description": "`<PLATFORM>:<name>`.",
            "example": "APNS:chat"
          },
          "arn": {
            "type": "string",
            "description": "The SNS ARN."
          },
          "name": {
            "type": "string"
          },
          "platform": {
            "type": "string",
            "enum": [
              "APNS",
              "APNS_SANDBOX",
              "GCM",
              "ADM"
            ]
          },
          "enabled": {
            "type": "boolean"
          },
          "disabled_reason": {
            "type": "string",
            "nullable": true,
            "description": "Why the application was disabled, null while enabled: the provider's reason when Clarion disabled it at a delivery (credentials refused, e.g. InvalidProviderToken or THIRD_PARTY_AUTH_ERROR, or settings that could not make a provider client), or `set by the API`."
          },
          "disabled_at": {
            "type": "string",
            "format": "date-time",
            "nullable": true,
            "description": "When the application was disabled; null while enabled (re-enabling clears it with the reason)."
          },
          "attributes": {
            "type": "object",
            "additionalProperties": {
              "type": "string"
            },
            "description": "SNS's visible attributes: the stored ones and the read-only AuthenticationMethod (APNs: Token or Certificate; GCM: Token for a service-account JSON, Key for an API key) and, for APNs certificate auth, the read-only AppleCertificateExpiryDate (the certificate's expiry, ISO 8601 UTC); never the credentials."
          },
          "created_at": {
            "type": "string",
            "format": "date-time"
          },
          "updated_at": {
            "type": "string",
            "format": "date-time"
          }
        },
        "additionalProperties": false
      },
      "ApplicationCreate": {
        "type": "object",
        "description": "As SNS: every platform needs `credential`; APNS, APNS_SANDBOX and ADM need `principal` too.",
        "required": [
          "name",
          "platform",
          "credential"
        ],
        "properties": {
          "name": {
            "type": "string",
            "description": "1-256 of A-Z a-z 0-9 _ - .",
            "pattern": "^[A-Za-z0-9_.-]{1,256}$"
          },
          "platform": {
            "type": "string",
            "enum": [
              "APNS",
              "APNS_SANDBOX",
              "GCM",
              "ADM"
            ]
          },
          "credential": {
            "type": "string",
            "description": "SNS's PlatformCredential: APNs .p8 key or private key, FCM service-account JSON, ADM client secret. Write-only."
          },
          "principal": {
            "type": "string",
            "description": "SNS's PlatformPrincipal: APNs key id or certificate, ADM client id. Write-only."
          },
          "attributes": {
            "type": "object",
            "description": "SNS platform-application attributes, the names SetPlatformApplicationAttributes accepts: ApplePlatformTeamID, ApplePlatformBundleID, SuccessFeedbackRoleArn, FailureFeedbackRoleArn, SuccessFeedbackSampleRate (0-100), EventEndpointCreated, EventEndpointUpdated, EventEndpointDeleted, EventDeliveryFailure (topic ARNs of this account and region); and Clarion's own ProviderEndpoint (the provider's base URL, e.g. the emulator), ProviderAuthEndpoint (token URL), ProviderCACertificate (extra trusted CA, PEM), FCMProjectID. PlatformCredential, PlatformPrincipal and Enabled are refused here: use credential, principal, enabled.",
            "properties": {
              "ApplePlatformTeamID": {
                "type": "string"
              },
              "ApplePlatformBundleID": {
                "type": "string"
              },
              "SuccessFeedbackRoleArn": {
                "type": "string"
              },
              "FailureFeedbackRoleArn": {
                "type": "string"
              },
              "SuccessFeedbackSampleRate": {
                "type": "string"
              },
              "EventEndpointCreated": {
                "type": "string"
              },
              "EventEndpointUpdated": {
                "type": "string"
              },
              "EventEndpointDeleted": {
                "type": "string"
              },
              "EventDeliveryFailure": {
                "type": "string"
              },
              "ProviderEndpoint": {
                "type": "string"
              },
              "ProviderAuthEndpoint": {
                "type": "string"
              },
              "ProviderCACertificate": {
                "type": "string"
              },
              "FCMProjectID": {
                "type": "string"
              },
              "ClarionSendRate": {
                "type": "string",
                "description": "Deliveries per second this application may be sent at, per gateway process (a positive number; empty: no limit)."
              }
            },
            "additionalProperties": false
          },
          "enabled": {
            "type": "boolean",
            "description": "Default true."
          }
        },
        "additionalProperties": false
      },
      "ApplicationPatch": {
        "type": "object",
        "properties": {
          "credential": {
            "type": "string",
            "description": "SNS's PlatformCredential: APNs .p8 key or private key, FCM service-account JSON, ADM client secret. Write-only."
          },
          "principal": {
            "type": "string",
            "description": "SNS's PlatformPrincipal: APNs key id or certificate, ADM client id. Write-only."
          },
          "attributes": {
            "type": "object",
            "description": "SNS platform-application attributes, the names SetPlatformApplicationAttributes accepts: ApplePlatformTeamID, ApplePlatformBundleID, SuccessFeedbackRoleArn, FailureFeedbackRoleArn, SuccessFeedbackSampleRate (0-100), EventEndpointCreated, EventEndpointUpdated, EventEndpointDeleted, EventDeliveryFailure (topic ARNs of this account and region); and Clarion's own ProviderEndpoint (the provider's base URL, e.g. the emulator), ProviderAuthEndpoint (token URL), ProviderCACertificate (extra trusted CA, PEM), FCMProjectID. PlatformCredential, PlatformPrincipal and Enabled are refused here: use credential, principal, enabled. Merged into the existing ones.",
            "properties": {
              "ApplePlatformTeamID": {
                "type": "string"
              },
              "ApplePlatformBundleID": {
                "type": "string"
              },
              "SuccessFeedbackRoleArn": {
                "type": "string"
              },
              "FailureFeedbackRoleArn": {
                "type": "string"
              },
              "SuccessFeedbackSampleRate": {
                "type": "string"
              },
              "EventEndpointCreated": {
                "type": "string"
              },
              "EventEndpointUpdated": {
                "type": "string"
              },
              "EventEndpointDeleted": {
                "type": "string"
              },
              "EventDeliveryFailure": {
                "type": "string"
              },
              "ProviderEndpoint": {
                "type": "string"
              },
              "ProviderAuthEndpoint": {
                "type": "string"
              },
              "ProviderCACertificate": {
                "type": "string"
              },
              "FCMProjectID": {
                "type": "string"
              },
              "ClarionSendRate": {
                "type": "string",
                "description": "Deliveries per second this application may be sent at, per gateway process (a positive number; empty: no limit)."
              }
            },
            "additionalProperties": false
          },
          "enabled": {
            "type": "boolean"
          }
        },
        "additionalProperties": false
      },
      "ApplicationList": {
        "type": "object",
        "required": [
          "items",
          "next_cursor"
        ],
        "properties": {
          "items": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Application"
            }
          },
          "next_cursor": {
            "type": "string",
            "description": "Pass as `cursor` for the next page; null on the last page.",
            "nullable": true
          }
        }
      },
      "Endpoint": {
        "type": "object",
        "required": [
          "id",
          "arn",
          "application",
          "token",
          "enabled",
          "disabled_reason",
          "disabled_at",
          "custom_user_data",
          "user_id",
          "app_version",
          "language",
          "os_type",
          "os_version",
          "device_manufacturer",
          "device_model",
          "created_at",
          "updated_at"
        ],
        "properties": {
          "id": {
            "type": "string",
            "description": "UUID.",
            "format": "uuid"
          },
          "arn": {
            "type": "string",
            "description": "The SNS ARN."
          },
          "application": {
            "type": "string",
            "description": "The application's id."
          },
          "token": {
            "type": "string"
          },
          "enabled": {
            "type": "boolean"
          },
          "disabled_reason": {
            "type": "string",
            "nullable": true,
            "description": "Why the endpoint was disabled, null while enabled: the provider's reason when Clarion disabled it at a delivery (the token refused, e.g. Unregistered or BadDeviceToken), `set by the API`, or `created disabled`."
          },
          "disabled_at": {
            "type": "string",
            "format": "date-time",
            "nullable": true,
            "description": "When the endpoint was disabled; null while enabled (re-enabling clears it with the reason)."
          },
          "custom_user_data": {
            "type": "string",
            "nullable": true
          },
          "user_id": {
            "type": "string",
            "nullable": true
          },
          "app_version": {
            "type": "string",
            "description": "App version",
            "nullable": true
          },
          "language": {
            "type": "string",
            "description": "Language",
            "nullable": true
          },
          "os_type": {
            "type": "string",
            "description": "OS type",
            "nullable": true
          },
          "os_version": {
            "type": "string",
            "description": "OS version",
            "nullable": true
          },
          "device_manufacturer": {
            "type": "string",
            "description": "Device manufacturer",
            "nullable": true
          },
          "device_model": {
            "type": "string",
            "description": "Device model",
            "nullable": true
          },
          "created_at": {
            "type": "string",
            "format": "date-time"
          },
          "updated_at": {
            "type": "string",
            "format": "date-time"
          }
        },
        "additionalProperties": false
      },
      "EndpointCreate": {
        "type": "object",
        "required": [
          "token"
        ],
        "properties": {
          "token": {
            "type": "string",
            "description": "The device token, SNS's rules: APNs tokens are hexadecimal, at most 400 characters, stored lower-case; others at most 4096 bytes.",
            "minLength": 1
          },
          "enabled": {
            "type": "boolean",
            "description": "Default true."
          },
          "custom_user_data": {
            "type": "string",
            "description": "At most 2048 bytes."
          },
          "user_id": {
            "type": "string",
            "description": "Lets `POST /v1/publish` reach this device through `{\"user\": ...}`.",
            "minLength": 1
          },
          "app_version": {
            "type": "string",
            "description": "App version, at most 256 bytes."
          },
          "language": {
            "type": "string",
            "description": "Language, at most 256 bytes."
          },
          "os_type": {
            "type": "string",
            "description": "OS type, at most 256 bytes."
          },
          "os_version": {
            "type": "string",
            "description": "OS version, at most 256 bytes."
          },
          "device_manufacturer": {
            "type": "string",
            "description": "Device manufacturer, at most 256 bytes."
          },
          "device_model": {
            "type": "string",
            "description": "Device model, at most 256 bytes."
          }
        },
        "additionalProperties": false
      },
      "EndpointPatch": {
        "type": "object",
        "properties": {
          "token": {
            "type": "string",
            "description": "The device token, SNS's rules: APNs tokens are hexadecimal, at most 400 characters, stored lower-case; others at most 4096 bytes.",
            "minLength": 1
          },
          "enabled": {
            "type": "boolean",
            "description": "true clears the disabled reason."
          },
          "custom_user_data": {
            "type": "string",
            "description": "null clears it.",
            "nullable": true
          },
          "user_id": {
            "type": "string",
            "description": "null clears it.",
            "minLength": 1,
            "nullable": true
          },
          "app_version": {
            "type": "string",
            "description": "App version, at most 256 bytes."
          },
          "language": {
            "type": "string",
            "description": "Language, at most 256 bytes."
          },
          "os_type": {
            "type": "string",
            "description": "OS type, at most 256 bytes."
          },
          "os_version": {
            "type": "string",
            "description": "OS version, at most 256 bytes."
          },
          "device_manufacturer": {
            "type": "string",
            "description": "Device manufacturer, at most 256 bytes."
          },
          "device_model": {
            "type": "string",
            "description": "Device model, at most 256 bytes."
          }
        },
        "additionalProperties": false
      },
      "EndpointList": {
        "type": "object",
        "required": [
          "items",
          "next_cursor"
        ],
        "properties": {
          "items": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Endpoint"
            }
          },
          "next_cursor": {
            "type": "string",
            "description": "Pass as `cursor` for the next page; null on the last page.",
            "nullable": true
          }
        }
      },
      "Topic": {
        "type": "object",
        "required": [
          "id",
          "arn",
          "name",
          "attributes",
          "created_at"
        ],
        "properties": {
          "id": {
            "type": "string",
            "description": "The name."
          },
          "arn": {
            "type": "string",
            "description": "The SNS ARN."
          },
          "name": {
            "type": "string"
          },
          "attributes": {
            "type": "object",
            "additionalProperties": {
              "type": "string"
            },
            "description": "SNS topic attributes."
          },
          "created_at": {
            "type": "string",
            "format": "date-time"
          }
        },
        "additionalProperties": false
      },
      "TopicCreate": {
        "type": "object",
        "required": [
          "name"
        ],
        "properties": {
          "name": {
            "type": "string",
            "description": "1-256 of A-Z a-z 0-9 _ -",
            "pattern": "^[A-Za-z0-9_-]{1,256}$"
          },
          "attributes": {
            "type": "object",
            "description": "SNS topic attributes, the names SetTopicAttributes accepts, with SNS's value checks (policies are JSON objects, DisplayName at most 100 characters, sample rates 0-100).",
            "properties": {
              "DisplayName": {
                "type": "string"
              },
              "Policy": {
                "type": "string"
              },
              "DeliveryPolicy": {
                "type": "string"
              },
              "KmsMasterKeyId": {
                "type": "string"
              },
              "TracingConfig": {
                "type": "string"
              },
              "SignatureVersion": {
                "type": "string"
              },
              "ApplicationSuccessFeedbackRoleArn": {
                "type": "string"
              },
              "ApplicationSuccessFeedbackSampleRate": {
                "type": "string"
              },
              "ApplicationFailureFeedbackRoleArn": {
                "type": "string"
              },
              "DataProtectionPolicy": {
                "type": "string"
              },
              "ArchivePolicy": {
                "type": "string"
              }
            },
            "additionalProperties": false
          }
        },
        "additionalProperties": false
      },
      "TopicList": {
        "type": "object",
        "required": [
          "items",
          "next_cursor"
        ],
        "properties": {
          "items": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Topic"
            }
          },
          "next_cursor": {
            "type": "string",
            "description": "Pass as `cursor` for the next page; null on the last page.",
            "nullable": true
          }
        }
      },
      "Subscription": {
        "type": "object",
        "required": [
          "id",
          "arn",
          "topic",
          "topic_arn",
          "endpoint",
          "endpoint_arn",
          "filter_policy",
          "filter_policy_scope",
          "created_at"
        ],
        "properties": {
          "id": {
            "type": "string",
            "description": "UUID.",
            "format": "uuid"
          },
          "arn": {
            "type": "string",
            "description": "The SNS ARN."
          },
          "topic": {
            "type": "string"
          },
          "topic_arn": {
            "type": "string"
          },
          "endpoint": {
            "type": "string",
            "description": "The endpoint's id.",
            "nullable": true
          },
          "endpoint_arn": {
            "type": "string",
            "nullable": true
          },
          "filter_policy": {
            "type": "object",
            "nullable": true,
            "description": "SNS filter policy, as given; subscribers it does not match are counted `filtered`."
          },
          "filter_policy_scope": {
            "type": "string",
            "enum": [
              "MessageAttributes",
              "MessageBody"
            ],
            "nullable": true,
            "description": "Where the filter policy looks (null without a policy)."
          },
          "created_at": {
            "type": "string",
            "format": "date-time"
          }
        },
        "additionalProperties": false
      },
      "SubscriptionCreate": {
        "type": "object",
        "required": [
          "endpoint"
        ],
        "properties": {
          "endpoint": {
            "type": "string",
            "description": "An endpoint id or ARN."
          },
          "filter_policy": {
            "type": "object",
            "description": "SNS filter policy (the grammar and limits of SNS's FilterPolicy; docs/api.md)."
          },
          "filter_policy_scope": {
            "type": "string",
            "enum": [
              "MessageAttributes",
              "MessageBody"
            ],
            "description": "Where the filter policy looks: message attributes (default) or the JSON message body (nested keys)."
          }
        },
        "additionalProperties": false
      },
      "SubscriptionList": {
        "type": "object",
        "required": [
          "items",
          "next_cursor"
        ],
        "properties": {
          "items": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Subscription"
            }
          },
          "next_cursor": {
            "type": "string",
            "description": "Pass as `cursor` for the next page; null on the last page.",
            "nullable": true
          }
        }
      },
      "Target": {
        "description": "Exactly one of endpoint, topic, user.",
        "oneOf": [
          {
            "type": "object",
            "required": [
              "endpoint"
            ],
            "properties": {
              "endpoint": {
                "type": "string",
                "description": "An endpoint id or ARN."
              }
            },
            "additionalProperties": false
          },
          {
            "type": "object",
            "required": [
              "topic"
            ],
            "properties": {
              "topic": {
                "type": "string",
                "description": "A topic id or ARN."
              }
            },
            "additionalProperties": false
          },
          {
            "type": "object",
            "description": "Every enabled endpoint of the application with this user_id (none is not an error).",
            "required": [
              "user"
            ],
            "properties": {
              "user": {
                "type": "object",
                "required": [
                  "app",
                  "user_id"
                ],
                "properties": {
                  "app": {
                    "type": "string",
                    "description": "A platform application id or ARN."
                  },
                  "user_id": {
                    "type": "string",
                    "minLength": 1
                  }
                },
                "additionalProperties": false
              }
            },
            "additionalProperties": false
          }
        ]
      },
      "MessageAttribute": {
        "oneOf": [
          {
            "type": "string"
          },
          {
            "type": "number"
          },
          {
            "type": "object",
            "required": [
              "type",
              "value"
            ],
            "properties": {
              "type": {
                "type": "string",
                "description": "String, Number, Binary or String.Array, optionally with a custom suffix (Number.int)."
              },
              "value": {
                "type": "string",
                "description": "Base64 for Binary."
              }
            },
            "additionalProperties": false
          }
        ]
      },
      "PublishRequest": {
        "type": "object",
        "required": [
          "targets",
          "message"
        ],
        "properties": {
          "targets": {
            "type": "array",
            "minItems": 1,
            "maxItems": 100,
            "items": {
              "$ref": "#/components/schemas/Target"
            }
          },
          "message": {
            "description": "A string (the same text for every platform), or a message map as SNS's MessageStructure=json: keys default, APNS, APNS_SANDBOX, GCM, ADM, ...; values are strings (JSON text for platform keys) or objects (encoded for you). Topic targets need a string `default`; endpoint and user targets need `default` or their platform's key.",
            "oneOf": [
              {
                "type": "string",
                "minLength": 1
              },
              {
                "type": "object",
                "additionalProperties": {
                  "oneOf": [
                    {
                      "type": "string"
                    },
                    {
                      "type": "object"
                    }
                  ]
                }
              }
            ]
          },
          "attributes": {
            "type": "object",
            "additionalProperties": {
              "$ref": "#/components/schemas/MessageAttribute"
            },
            "description": "Message attributes; the reserved AWS.SNS.MOBILE.* ones shape the push (push type, priority, collapse id, topic, TTL) with SNS's rules."
          },
          "ttl": {
            "type": "integer",
            "minimum": 0,
            "maximum": 2419200,
            "description": "Seconds to live for every platform (an explicit AWS.SNS.MOBILE.*.TTL attribute wins). 0: now or never."
          },
          "campaign": {
            "type": "object",
            "description": "Issue 8: a campaign push. Every delivery carries, under `namespace`, flat string values `type` (\"campaign\"), `message_id`, `delivery_id`, `deep_link` when set, and the `data` keys: an object beside `aps` for APNs, a JSON-encoded string in `data[namespace]` for FCM and ADM.",
            "required": [
              "name",
              "namespace"
            ],
            "properties": {
              "id": {
                "type": "string"
              },
              "name": {
                "type": "string"
              },
              "namespace": {
                "type": "string"
              },
              "deep_link": {
                "type": "string"
              },
              "data": {
                "type": "object",
                "additionalProperties": {
                  "type": "string"
                }
              }
            },
            "additionalProperties": false
          },
          "namespace": {
            "type": "string",
            "description": "An ordinary push that carries the namespace with `type` \"message\" and `message_id`, so an app can recognise its pushes and drop duplicates."
          }
        },
        "additionalProperties": false
      },
      "PublishAccepted": {
        "type": "object",
        "required": [
          "messages"
        ],
        "properties": {
          "messages": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "id",
                "target"
              ],
              "properties": {
                "id": {
                  "type": "string",
                  "description": "The message id.",
                  "format": "uuid"
                },
                "target": {
                  "type": "integer",
                  "description": "Index into the request's targets."
                },
                "endpoint": {
                  "type": "string",
                  "description": "For endpoint and user targets."
                },
                "topic": {
                  "type": "string",
                  "description": "For topic targets."
                }
              },
              "additionalProperties": false
            }
          },
          "failed": {
            "type": "array",
            "description": "Present only when some messages were stored and others were refused while storing (an endpoint deleted or disabled meanwhile, a full intake queue): those are not stored; the listed `messages` are. Retry only these.",
            "items": {
              "type": "object",
              "required": [
                "target",
                "error"
              ],
              "properties": {
                "target": {
                  "type": "integer"
                },
                "endpoint": {
                  "type": "string"
                },
                "error": {
                  "type": "object",
                  "required": [
                    "code",
                    "message",
                    "field"
                  ],
                  "properties": {
                    "code": {
                      "type": "string",
                      "description": "A stable snake_case code: unauthorized, invalid_api_key, missing_field, invalid_field, invalid_json, invalid_query, unsupported_media_type, not_found, conflict, endpoint_disabled, application_disabled, method_not_allowed, payload_too_large, internal_error, service_unavailable."
                    },
                    "message": {
                      "type": "string",
                      "description": "For people."
                    },
                    "field": {
                      "type": "string",
                      "description": "The offending input as a path into the body (`targets[0].endpoint`) or a parameter name (`id`, `cursor`); null when the error is not about one field.",
                      "nullable": true
                    }
                  },
                  "additionalProperties": false
                }
              },
              "additionalProperties": false
            }
          },
          "campaign": {
            "type": "string",
            "description": "The campaign id, when the publish was a campaign."
          }
        },
        "additionalProperties": false
      },
      "MessageStatus": {
        "type": "object",
        "required": [
          "id",
          "state",
          "target_kind",
          "planned",
          "shards",
          "shards_done",
          "planned_targets",
          "progress",
          "deliveries",
          "failures_by_reason",
          "pending_retries",
          "published_at",
          "started_at",
          "completed_at",
          "expires_at"
        ],
        "properties": {
          "id": {
            "type": "string",
            "format": "uuid"
          },
          "state": {
            "type": "string",
            "enum": [
              "Enqueued",
              "Processing",
              "Completed",
              "Failed",
              "Expired"
            ]
          },
          "target_kind": {
            "type": "string",
            "enum": [
              "endpoint",
              "topic",
              "user",
              "audience"
            ]
          },
          "planned": {
            "type": "boolean",
            "description": "Whether the message has been cut into delivery shards (a direct publish: once a dispatcher has claimed it)."
          },
          "shards": {
            "type": "integer"
          },
          "shards_done": {
            "type": "integer"
          },
          "planned_targets": {
            "type": "integer",
            "format": "int64",
            "description": "Targets counted when the shards were planned (an estimate until the end)."
          },
          "progress": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "Deliveries with a final outcome over the targets; 1 once the state is final."
          },
          "deliveries": {
            "type": "object",
            "description": "Counters summed over the shards: targeted = filtered + skipped + accepted + failed + expired once finished; sent counts provider hand-offs, retries included. filtered counts subscribers whose filter policy did not match the message.",
            "required": [
              "targeted",
              "sent",
              "accepted",
              "failed",
              "retried",
              "skipped",
              "expired",
              "filtered"
            ],
            "properties": {
              "targeted": {
                "type": "integer",
                "format": "int64"
              },
              "sent": {
                "type": "integer",
                "format": "int64"
              },
              "accepted": {
                "type": "integer",
                "format": "int64"
              },
              "failed": {
                "type": "integer",
                "format": "int64"
              },
              "retried": {
                "type": "integer",
                "format": "int64"
              },
              "skipped": {
                "type": "integer",
                "format": "int64"
              },
              "expired": {
                "type": "integer",
                "format": "int64"
              },
              "filtered": {
                "type": "integer",
                "format": "int64"
              }
            },
            "additionalProperties": false
          },
          "failures_by_reason": {
            "type": "object",
            "additionalProperties": {
              "type": "integer",
              "format": "int64"
            },
            "description": "Failed deliveries by provider reason (Unregistered, BadDeviceToken, ...)."
          },
          "pending_retries": {
            "type": "integer",
            "format": "int64"
          },
          "published_at": {
            "type": "string",
            "format": "date-time"
          },
          "started_at": {
            "type": "string",
            "format": "date-time",
            "nullable": true
          },
          "completed_at": {
            "type": "string",
            "format": "date-time",
            "nullable": true
          },
          "expires_at": {
            "type": "string",
            "format": "date-time",
            "nullable": true
          }
        },
        "additionalProperties": false
      }
    }
  }
}

"""#

    static let bytes = Array(text.utf8)
}
